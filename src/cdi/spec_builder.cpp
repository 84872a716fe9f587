#include "cdi/spec_builder.h"

#include <set>

#include "plan/device_ids.h"
#include "plan/imex.h"
#include "plan/nvidia_edits_nodes.h"

namespace kgpu {
namespace {

using nlohmann::json;

json device_node(const Config& config, const std::string& path) {
  return {{"path", path}, {"hostPath", host_path_under(config.dev_root(), path)}, {"permissions", "rw"}};
}

json device_nodes(const Config& config, const std::vector<std::string>& paths) {
  json out = json::array();
  for (const auto& p : paths) out.push_back(device_node(config, p));
  return out;
}

json file_mount(const Config& config, const std::string& path) {
  return {{"hostPath", host_path_under(config.nvidia_driver_root, path)},
          {"containerPath", path},
          {"options", json::array({"ro", "nosuid", "nodev", "bind"})}};
}

json hook(const Config& config, std::vector<std::string> args) {
  // The hook binary's argv[0] is its own name, then the subcommand (nvidia-ctk hook <name> ...).
  args.insert(args.begin(), {"nvidia-ctk", "hook"});
  return {{"hookName", "createContainer"}, {"path", config.nvidia_ctk_path}, {"args", args}};
}

json common_edits(const Config& config, const Inventory& inventory, const DriverFiles& files) {
  json edits;
  edits["env"] = json::array({"NVIDIA_VISIBLE_DEVICES=void"});
  // Control nodes: what the scan found; when it found none (e.g. no /dev in the dev root as seen
  // from here) fall back to what the backend reported or the always-present three.
  std::vector<std::string> control = files.control_nodes;
  if (control.empty()) control = nvidia_control_node_paths(inventory);
  edits["deviceNodes"] = device_nodes(config, control);
  json mounts = json::array();
  for (const auto* group : {&files.libraries, &files.binaries, &files.firmware, &files.ipc_sockets})
    for (const auto& path : *group) mounts.push_back(file_mount(config, path));
  edits["mounts"] = mounts;
  json hooks = json::array();
  if (!files.library_dir.empty()) {
    hooks.push_back(hook(config, {"create-symlinks", "--link", "libcuda.so.1::" + files.library_dir + "/libcuda.so"}));
    hooks.push_back(hook(config, {"update-ldcache", "--folder", files.library_dir}));
  }
  edits["hooks"] = hooks;
  return edits;
}

}  // namespace

json nvidia_common_cdi_edits(const Config& config, const Inventory& inventory, const DriverFiles& files) {
  return common_edits(config, inventory, files);
}

json build_cdi_spec(const Config& config, const Inventory& inventory, const DriverFiles& files) {
  json devices = json::array();
  std::vector<std::string> all_nodes;
  std::set<std::string> seen;
  auto add = [&](const std::string& name, const std::vector<std::string>& nodes) {
    devices.push_back({{"name", name}, {"containerEdits", {{"deviceNodes", device_nodes(config, nodes)}}}});
    for (const auto& n : nodes)
      if (seen.insert(n).second) all_nodes.push_back(n);
  };
  for (const auto& gpu : inventory.gpus) {
    if (gpu.vendor != Vendor::Nvidia) continue;
    add(gpu_device_id(config, gpu), nvidia_gpu_node_paths(gpu));
    for (const auto& mig : gpu.mig_devices) add(mig_device_id(config, gpu, mig), nvidia_mig_node_paths(gpu, mig));
  }
  add("all", std::vector<std::string>(all_nodes));  // a copy: add() appends to all_nodes
  return {{"cdiVersion", kCdiSpecVersion},
          {"kind", config.cdi_kind},
          {"devices", devices},
          {"containerEdits", common_edits(config, inventory, files)}};
}

json build_imex_cdi_spec(const Config& config) {
  json devices = json::array();
  for (int id : config.imex_channel_ids)
    devices.push_back({{"name", std::to_string(id)},
                       {"containerEdits", {{"deviceNodes", device_nodes(config, {imex_channel_path(id)})}}}});
  return {{"cdiVersion", kCdiSpecVersion}, {"kind", imex_cdi_kind(config)}, {"devices", devices}};
}

}  // namespace kgpu
