#include "plan/nvidia_edits_nodes.h"

#include <algorithm>

namespace kgpu {

const std::vector<std::string>& nvidia_control_node_candidates() {
  static const std::vector<std::string> all = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                                               "/dev/nvidia-modeset"};
  return all;
}

std::vector<std::string> nvidia_control_node_paths(const Inventory& inventory) {
  const auto& all = nvidia_control_node_candidates();
  if (inventory.control_nodes.empty()) return {all[0], all[1], all[2]};
  std::vector<std::string> out;
  for (const auto& path : all)
    if (std::any_of(inventory.control_nodes.begin(), inventory.control_nodes.end(),
                    [&](const DeviceNodeRef& n) { return n.path == path; }))
      out.push_back(path);
  return out;
}

std::vector<std::string> nvidia_gpu_node_paths(const Gpu& gpu) {
  std::vector<std::string> out;
  for (const auto& node : gpu.device_nodes) out.push_back(node.path);
  if (out.empty() && gpu.minor >= 0) out.push_back("/dev/nvidia" + std::to_string(gpu.minor));
  return out;
}

std::vector<std::string> nvidia_mig_node_paths(const Gpu& parent, const MigDevice& mig) {
  std::vector<std::string> out = nvidia_gpu_node_paths(parent);
  for (const auto& node : mig.capability_nodes) out.push_back(node.path);
  return out;
}

std::string host_path_under(const std::string& root, const std::string& path) {
  std::string r = root;
  while (!r.empty() && r.back() == '/') r.pop_back();
  if (path.empty() || path.front() != '/') return r + "/" + path;
  return r + path;
}

}  // namespace kgpu
