#pragma once
// The NVIDIA backend: reads every GPU, MIG device and GPU-to-GPU link through NVML (plus NUMA nodes
// from sysfs and MIG capability minors from procfs) into one immutable Inventory.
#include <string>

#include "core/inventory.h"
#include "core/result.h"
#include "nvml/nvml_library.h"

namespace kgpu {

struct NvidiaDiscoveryOptions {
  std::string sysfs_root = "/sys";   // NUMA: <sysfs_root>/bus/pci/devices/<bdf>/numa_node
  std::string proc_root = "/proc";   // MIG caps: <proc_root>/driver/nvidia-caps/mig-minors
  std::string dev_root = "/";        // root of /dev: device node paths are relative to it; the discovery
                                     // loop watches <dev_root>/dev for the driver's nodes appearing
};

// Builds the Inventory. Initialises NVML for the duration of the call (reference counted, so an
// NVML session held elsewhere stays valid). Only an NVML init or device-count failure is an Error:
// one GPU that fails becomes an Inventory warning and is either marked unhealthy (when its UUID is
// known) or left out, so the other GPUs stay usable. Topology is read once, here.
Result<Inventory> discover_nvidia(NvmlLibrary& nvml, const NvidiaDiscoveryOptions& options);

}  // namespace kgpu
