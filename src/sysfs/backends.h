#pragma once
// sysfs backends: AMD (amdgpu + KFD), Intel (i915 / xe) and generic device groups. Each reads only
// under SysfsRoots and returns an Inventory; Error only when the backend as a whole cannot run
// (driver not loaded, no /sys/class/drm). Per-device problems become Inventory::warnings naming the
// path, and that device is skipped; the rest are served.
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/inventory.h"
#include "core/result.h"
#include "sysfs/generic_group.h"
#include "sysfs/roots.h"

namespace kgpu {

// --- presence probes (cheap: one stat each), for automatic backend selection ---
bool nvidia_present(const SysfsRoots& roots);  // nvidia kernel module loaded
bool amd_present(const SysfsRoots& roots);     // amdgpu driver bound in the PCI tree
bool intel_present(const SysfsRoots& roots);   // a DRM card with PCI vendor 0x8086

// --- discovery ---
// AMD GPUs: uuid = PCI address "0000:c1:00.0" (ROCm plugin's ID); MI300 partitions (CPX/DPX/QPX)
// each become a Gpu with uuid "<BDF>-xcp<k>". device_nodes: /dev/dri/cardN, /dev/dri/renderDM
// (the edits add /dev/kfd). attributes: family, gfx-target, device-id, product-name, vram, cu-count,
// simd-count, compute-partition, memory-partition, partition-index, partitions,
// available-compute-partitions, available-memory-partitions, kfd-unique-id (hex, when known).
Result<Inventory> discover_amd(const SysfsRoots& roots);

// Intel GPUs (i915 or xe): uuid = PCI address. attributes: driver ("i915"|"xe"), device-id,
// pci-class ("0300"), card ("card0"), tiles, by-path-links (comma list of existing link names in
// /dev/dri/by-path). SR-IOV PFs with enabled VFs are skipped (their VFs are served).
Result<Inventory> discover_intel(const SysfsRoots& roots);

// One Gpu (vendor Generic) per matched device; attributes: resource, group-index. The group's
// replicas stay in its typed config field (GenericDeviceGroup::replicas), which the planner reads.
Result<Inventory> discover_generic(const std::vector<GenericDeviceGroup>& groups, const SysfsRoots& roots);

// --- health on rescans ---
// Pure. `previous` is what the daemon advertises; `rescanned` is a fresh discovery. Non-NVIDIA
// devices missing from the rescan leave the healthy set ("sysfs node ... disappeared"); devices
// present take the rescan's health (so a device that reappears is healthy again). NVIDIA GPUs pass
// through unchanged. Order and IDs of `previous` are kept; devices new in the rescan are appended.
Inventory recheck_health(const Inventory& previous, const Inventory& rescanned);

// Host directories whose entries change when a sysfs-backed device comes or goes: the daemon can
// inotify them (devtmpfs supports inotify; sysfs does not) and rescan on change instead of polling.
// AMD/Intel: <dev>/dev/dri; generic groups: the parent directory of every device pattern's first
// wildcard-free prefix. Sorted, unique; directories need not exist yet.
std::vector<std::string> rescan_watch_dirs(const Config& config, const struct BackendChoice& choice);

// --- backend selection ---
struct BackendChoice {
  bool nvidia = false, amd = false, intel = false, generic = false;
  bool operator==(const BackendChoice&) const = default;
};
struct NodeFacts {
  bool nvidia = false, amd = false, intel = false;
  bool device_groups = false;  // config declares at least one generic group
  bool operator==(const NodeFacts&) const = default;
};
// Pure. `configured` is Config::backends: "auto" (every backend whose hardware is present; generic
// when groups are declared), a name ("nvidia", "amd", "intel", "generic") forces it on, "-name"
// turns it off (wins over auto and over a forcing entry). An empty list means "auto".
Result<BackendChoice> choose_backends(const std::vector<std::string>& configured, const NodeFacts& facts);
NodeFacts probe_node(const Config& config);
SysfsRoots roots_from(const Config& config);

// Runs the chosen AMD / Intel / generic backends (NVIDIA is the NVML backend's, not run here) and
// merges them; a backend that fails adds a warning and never stops the others. A backend error
// for a forced backend is a warning too.
Inventory discover_sysfs_backends(const Config& config);
Inventory discover_sysfs_backends(const Config& config, const BackendChoice& choice);

}  // namespace kgpu
