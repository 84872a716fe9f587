#pragma once
// The DRA face of the inventory: which devices each DRA driver publishes for this node, with the
// attributes and capacities NVIDIA's DRA driver for GPUs uses (so claims written for it select kgpu's
// devices unchanged). Pure: the inputs that need I/O (PCIe roots from sysfs, the Node's UID) come in
// through SliceOptions. The ResourceSlice objects that carry them are publish/slice_objects.h's.
#include <cstdint>
#include <map>
#include <set>
#include <optional>
#include <string>
#include <string_view>
#include <vector>


#include "core/inventory.h"
#include "core/result.h"
#include "dra/model/dra_device.h"
#include "dra/model/dynamic_mig.h"

namespace kgpu::dra {

// The attribute that groups GPUs joined by NVLink (directly, through NVSwitches, or through a
// multi-node NVLink fabric), so a claim's constraint
//   matchAttribute: kgpu.io/nvlinkIsland
// keeps its GPUs on one island. Qualified: NVIDIA's driver has no such attribute, and a kgpu name in
// its domain could clash with one it adds later.
inline constexpr std::string_view kNvlinkIslandAttribute = "kgpu.io/nvlinkIsland";
inline constexpr std::string_view kPcieRootAttribute = "resource.kubernetes.io/pcieRoot";
inline constexpr std::string_view kPciBusIdAttribute = "resource.kubernetes.io/pciBusID";

// Each vendor's DRA driver name, the default of each vendor's own DRA driver.
struct DriverNames {
  std::string nvidia = "gpu.nvidia.com";
  std::string amd = "gpu.amd.com";
  std::string intel = "gpu.intel.com";
  bool operator==(const DriverNames&) const = default;
};

// The `type` of a full GPU published for memory shares. Not "gpu": the scheduler gives a request
// that names no capacity each policy's default of a device with allowMultipleAllocations (KEP-5075),
// so a shareable GPU that NVIDIA's class gpu.nvidia.com (type == 'gpu') selects would hand a claim for
// a whole GPU a 1Gi share, and a two-GPU claim the same GPU twice. Shareable GPUs are selected by
// kgpu's own DeviceClass gpu-share.kgpu.io (type == 'gpu-share') only, as NVIDIA keeps MIG and VFIO
// devices apart by type. Where the API server does not keep consumable capacity they go out whole,
// as type "gpu" again (with_share_support).
inline constexpr std::string_view kShareableGpuType = "gpu-share";
inline constexpr std::string_view kWholeGpuType = "gpu";

// Where a pool's shared counter sets go (dynamic MIG), as NVIDIA's driver chooses by the API
// server's version:
//   Combined (< 1.35): each counter set in one slice with the devices consuming it (1.34's
//     allocator looks for a device's counter set in the device's own slice).
//   Split (>= 1.35): counter sets in slices of their own, the devices in others (1.35 refuses a
//     slice holding both).
enum class CounterLayout { Combined, Split };

struct SliceOptions {
  std::string node_name;  // the pool name and spec.nodeName
  std::string node_uid;   // the Node's metadata.uid for the owner reference; empty leaves it out
  DriverNames drivers;
  // PCIe root complex per GPU ("pci0000:00"), keyed by normalize_pci_bus_id(); GPUs missing here
  // publish no resource.kubernetes.io/pcieRoot (as NVIDIA's driver does when it cannot resolve one).
  std::map<std::string, std::string> pcie_roots;
  // XIDs whose taint evicts the pods using the device (NoExecute) instead of only keeping new ones
  // off (NoSchedule): the operator's opt-in (kgpu.dra.noExecuteXids).
  std::vector<uint64_t> no_execute_xids;
  // Full NVIDIA GPUs published for memory shares (kgpu.dra.sharing.memory), by UUID: with
  // allowMultipleAllocations, `memory_policy` on their memory and, when multiprocessors_default > 0,
  // `multiprocessors` (the SM count) as a second consumable capacity. A GPU in MIG mode, or one
  // whose memory is below the policy's minimum, is not shared (a note says why).
  std::set<std::string> memory_shared_gpus;
  CapacityRequestPolicy memory_policy;
  uint64_t multiprocessors_default = 0;
  // GPUs published for dynamic MIG (kgpu.dra.mig.dynamic; dra/model/dynamic_mig_select.h says
  // which): each as its layout's devices (the full GPU and every placement) consuming its counter
  // set, instead of its full device or its static MIG devices. Health taints as for any device; an
  // XID on an instance kgpu created taints the placement it sits at.
  std::vector<DynamicMigLayout> dynamic_mig;
  // Set by the publisher from the API server's version; `kgpu devices -o dra` shows Combined.
  CounterLayout counter_layout = CounterLayout::Combined;
};

// Health as device taints, as NVIDIA's DRA driver publishes it (keys in the driver's domain):
//   <driver>/xid=<XID>   NoSchedule (NoExecute for no_execute_xids): an XID (48 for double-bit ECC)
//                        made the device unhealthy; None: the latest XID the policy ignores
//   <driver>/gpu-lost    NoSchedule: the GPU did not answer (lost, gone at re-discovery, failed query)
// An unhealthy NVIDIA device stays in its pool with its taint, so a running claim's device stays
// visible; AMD and Intel devices have no such keys and are left out while unhealthy.
inline constexpr std::string_view kXidTaintKey = "xid";
inline constexpr std::string_view kGpuLostTaintKey = "gpu-lost";

struct Publication {
  // One pool per driver with GPUs on the node, in the order NVIDIA, AMD, Intel. A driver whose GPUs
  // are all unhealthy keeps its pool with no devices, so publishing it retracts them.
  std::vector<DriverPool> pools;
  // What was left out and why (unhealthy devices, generic devices, unparsable versions...).
  std::vector<std::string> notes;
  // What the operator must hear of (the daemon logs each once as a warning): attributes left out,
  // or devices not published, to keep the API server's validation limits.
  std::vector<std::string> warnings;
  bool operator==(const Publication&) const = default;
};

// Invalid node or driver names are errors; everything about single devices is a note.
Result<Publication> build_publication(const Inventory& inventory, const SliceOptions& options);

// Helpers with rules of their own, exposed for tests.
std::string normalize_pci_bus_id(const std::string& bus_id);       // "00000000:0F:00.0" -> "0000:0f:00.0"
std::optional<std::string> to_semver(const std::string& version);  // "8.0" -> "8.0.0", "535.104.05" -> "535.104.5"
// NVIDIA's DRA driver spells `brand` and `architecture` as go-nvlib does ("Nvidia", "Ada Lovelace"),
// kgpu's inventory as GPU Feature Discovery's labels do ("nvidia", "ada-lovelace"); a selector
// written for NVIDIA's driver compares the exact string. Empty (NVML did not say) -> "Unknown".
std::string nvidia_dra_brand(const std::string& inventory_brand);
std::string nvidia_dra_architecture(const std::string& inventory_architecture);
std::string binary_si_quantity(uint64_t value);                    // 42949672960 -> "40Gi", 14 -> "14"
// NVLink island per GPU, indexed like Inventory::gpus: "<fabric cluster UUID>.<clique>" for GPUs in a
// registered NVLink fabric, else "nvlink-<lowest NVML index>" of the GPUs joined by NVLink (every
// GPU when an NVSwitch joins them all; a GPU without NVLink is an island of its own).
std::vector<std::string> nvlink_islands(const Inventory& inventory);

}  // namespace kgpu::dra
