#pragma once
// Which /dev nodes an NVIDIA GPU or MIG device needs, as container paths. Shared by the Allocate
// edits (passDeviceSpecs) and the CDI spec, which must hand out exactly the same nodes.
#include <string>
#include <vector>

#include "core/inventory.h"

namespace kgpu {

// /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools, /dev/nvidia-modeset in that order, limited
// to Inventory::control_nodes when the backend listed them; otherwise the first three.
std::vector<std::string> nvidia_control_node_paths(const Inventory& inventory);

// All four control nodes, in the order above: what passDeviceSpecs offers at Allocate time, each
// marked DeviceSpec::only_if_present, whatever the backend saw at discovery (nodes come and go).
const std::vector<std::string>& nvidia_control_node_candidates();

// A GPU's nodes: Gpu::device_nodes, or /dev/nvidia<minor> when the backend gave none.
std::vector<std::string> nvidia_gpu_node_paths(const Gpu& gpu);

// A MIG device's nodes: its parent's nodes, then its GI and CI capability nodes.
std::vector<std::string> nvidia_mig_node_paths(const Gpu& parent, const MigDevice& mig);

// `path` (absolute, container view) under a host root: ("/", "/dev/x") -> "/dev/x",
// ("/run/nvidia/driver/", "/dev/x") -> "/run/nvidia/driver/dev/x".
std::string host_path_under(const std::string& root, const std::string& path);

}  // namespace kgpu
