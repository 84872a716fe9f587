#pragma once
// The Inventory: an immutable value describing the accelerators of one node, built by a backend
// (NVML, sysfs) and consumed by the pure planning code. Nothing here touches hardware.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace kgpu {

enum class Vendor { Nvidia, Amd, Intel, Generic };
const char* to_string(Vendor v);

// A device's health as the kubelet sees it, plus why, for logs and `kgpu devices`, and the XIDs
// behind it for DRA's device taints (NVIDIA's keys: gpu.nvidia.com/xid=<xid>, gpu-lost).
struct HealthState {
  // A constructor, not an aggregate: most marks say only healthy and why.
  HealthState(bool is_healthy = true, std::string why = {}, uint64_t marking_xid = 0)
      : healthy(is_healthy), reason(std::move(why)), xid(marking_xid) {}
  bool healthy = true;
  std::string reason;  // empty when healthy; e.g. "XID 79 (GPU has fallen off the bus)"
  // The XID that made it unhealthy (48 for a double-bit ECC error); 0 for other marks (lost, gone).
  uint64_t xid = 0;
  // The latest XID the health policy does not count against the device (an application's own
  // error, e.g. 13 or 43): no health change, shown by DRA as an informational taint; 0: none.
  uint64_t informational_xid = 0;
  bool operator==(const HealthState&) const = default;
};

// A device node to hand to a container (e.g. /dev/nvidia0, /dev/dri/renderD128), host path
// relative to the node's device root.
struct DeviceNodeRef {
  std::string path;
  bool operator==(const DeviceNodeRef&) const = default;
};

struct MigDevice {
  std::string uuid;            // "MIG-<uuid>"
  int index = 0;               // j in "i:j": MIG handle index on the parent GPU
  int gpu_instance_id = 0;
  int compute_instance_id = 0;
  // Where the GPU instance sits (nvmlGpuInstanceGetInfo): its profile id and the first and number
  // of memory slices it covers; -1 when NVML did not say.
  int gi_profile_id = -1;
  int placement_start = -1;
  int placement_size = 0;
  std::string profile;         // "1g.5gb", "1c.3g.20gb", "1g.10gb+me"
  uint64_t memory_bytes = 0;
  int multiprocessors = 0;
  int gpu_instance_slices = 0;
  int compute_instance_slices = 0;
  int copy_engines = 0, decoders = 0, encoders = 0, jpeg_engines = 0, ofa_engines = 0;
  // /dev/nvidia-caps/nvidia-cap<N> nodes for the GI and CI access capabilities.
  std::vector<DeviceNodeRef> capability_nodes;
  HealthState health;
  bool operator==(const MigDevice&) const = default;
};

struct Gpu {
  Vendor vendor = Vendor::Nvidia;
  int index = 0;                  // NVML index, or the backend's stable ordering
  std::string uuid;               // "GPU-<uuid>" for NVIDIA; stable ID for other vendors
  std::string product;            // "NVIDIA A100-SXM4-40GB"
  uint64_t memory_bytes = 0;
  int multiprocessors = 0;        // SM count (NVML device attributes); 0 when NVML did not say
  std::string pci_bus_id;         // "00000000:07:00.0" (NVML form) or "0000:07:00.0"
  uint32_t pci_device_id = 0;     // PCI device/vendor id word as NVML reports (0x20B010DE)
  int minor = -1;                 // /dev/nvidia<minor>
  std::optional<int> numa_node;   // absent when unknown or negative in sysfs
  int cc_major = 0, cc_minor = 0; // CUDA compute capability
  std::string architecture;       // "ampere", "hopper" ...
  std::string brand;              // "tesla", "nvidia" ...
  // NVML's memory addressing mode on coherent-memory systems ("HMM", "ATS", "None"): NVIDIA's DRA
  // attribute addressingMode. Empty when NVML does not report one (older drivers, other systems).
  std::string addressing_mode;
  std::string serial;
  bool mig_capable = false;
  bool mig_enabled = false;
  std::vector<MigDevice> mig_devices;
  std::string fabric_cluster_uuid;  // empty when not part of an NVLink fabric
  std::optional<uint32_t> fabric_clique;
  // Device nodes a container needs for this GPU (vendor-specific; NVIDIA: /dev/nvidia<minor>).
  std::vector<DeviceNodeRef> device_nodes;
  // Free-form vendor facts for labels (e.g. AMD "cu-count", "family", Intel "driver").
  std::map<std::string, std::string> attributes;
  HealthState health;
  bool operator==(const Gpu&) const = default;
};

// Connection between two GPUs, as NVML reports it.
enum class PcieLevel : int {
  // Values mirror nvmlGpuTopologyLevel_t so they order from closest to farthest.
  SameBoard = 0,       // NVML_TOPOLOGY_INTERNAL
  SingleSwitch = 10,   // NVML_TOPOLOGY_SINGLE
  MultipleSwitches = 20,
  HostBridge = 30,
  SameNuma = 40,       // NVML_TOPOLOGY_NODE
  CrossSocket = 50,    // NVML_TOPOLOGY_SYSTEM
  Unknown = 99,
};

struct GpuLink {
  int nvlinks = 0;  // number of NVLink lanes directly joining the pair (NVSwitch: per-GPU link count)
  PcieLevel pcie = PcieLevel::Unknown;
  bool operator==(const GpuLink&) const = default;
};

// Pairwise topology, indexed by position in Inventory::gpus (not NVML index).
struct Topology {
  std::vector<std::vector<GpuLink>> links;  // symmetric; links[i][i] unused
  bool nvswitch = false;                    // all GPUs joined through an NVSwitch fabric
  bool empty() const { return links.empty(); }
  const GpuLink& link(size_t a, size_t b) const { return links[a][b]; }
  bool operator==(const Topology&) const = default;
};

struct Inventory {
  std::string driver_version;      // "550.54.15"
  int cuda_driver_version = 0;     // 12040 means 12.4
  std::vector<Gpu> gpus;
  Topology topology;
  // Problems found during discovery that did not stop it (a GPU whose handle failed, a bad sysfs
  // file). Each names the device and the cause.
  std::vector<std::string> warnings;
  // Control device nodes present on the host (NVIDIA: /dev/nvidiactl, /dev/nvidia-uvm,
  // /dev/nvidia-uvm-tools, /dev/nvidia-modeset), container paths. Empty when the backend did not
  // look: NVIDIA edits then assume nvidiactl + the two UVM nodes and leave nvidia-modeset out.
  std::vector<DeviceNodeRef> control_nodes;
  bool operator==(const Inventory&) const = default;

  const Gpu* find_by_uuid(const std::string& uuid) const;
};

// Several backends may run on one node; merge their inventories into one (re-indexing topology).
Inventory merge(std::vector<Inventory> parts);

}  // namespace kgpu
