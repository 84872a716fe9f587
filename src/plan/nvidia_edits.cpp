// Container edits for NVIDIA GPUs and MIG devices, following NVIDIA's device plugin (reference §3):
// the pieces are added in its order (CDI, envvar, volume-mounts, device specs) so that combined
// strategies interact the same way (volume-mounts overrides the envvar value).
#include <algorithm>
#include <set>

#include "plan/device_edits.h"
#include "plan/device_ids.h"
#include "plan/imex.h"
#include "plan/nvidia_edits_cdi.h"
#include "plan/nvidia_edits_nodes.h"
#include "core/strings.h"

namespace kgpu {
namespace {

constexpr const char* kVisibleDevices = "NVIDIA_VISIBLE_DEVICES";
constexpr const char* kVolumeMountRoot = "/var/run/nvidia-container-devices";

bool is_cdi(DeviceListStrategy s) {
  return s == DeviceListStrategy::CdiAnnotations || s == DeviceListStrategy::CdiCri;
}

// The IDs the runtime understands (uuid or index strategy), in device order, without duplicates.
std::vector<std::string> runtime_ids(const Config& config, const Inventory& inventory,
                                     const std::vector<BackingDevice>& devices) {
  std::vector<std::string> ids;
  std::set<std::string> seen;
  for (const auto& d : devices) {
    const Gpu& gpu = inventory.gpus.at(d.gpu);
    std::string id = d.mig ? mig_device_id(config, gpu, gpu.mig_devices.at(*d.mig)) : gpu_device_id(config, gpu);
    if (seen.insert(id).second) ids.push_back(std::move(id));
  }
  return ids;
}

// The control nodes first, each only if present at Allocate time (never assumed from discovery),
// then the allocated devices' own nodes, which discovery found.
void add_device_specs(const Config& config, const Inventory& inventory, const std::vector<BackingDevice>& devices,
                      ContainerEdits& edits) {
  const std::string root = config.dev_root();
  for (const auto& path : nvidia_control_node_candidates())
    edits.devices.push_back({path, host_path_under(root, path), "rw", /*only_if_present=*/true});
  std::vector<std::string> paths;
  for (const auto& d : devices) {
    const Gpu& gpu = inventory.gpus.at(d.gpu);
    auto nodes = d.mig ? nvidia_mig_node_paths(gpu, gpu.mig_devices.at(*d.mig)) : nvidia_gpu_node_paths(gpu);
    paths.insert(paths.end(), nodes.begin(), nodes.end());
  }
  std::set<std::string> seen;  // two MIG devices of one GPU share the parent node
  for (const auto& path : paths)
    if (seen.insert(path).second) edits.devices.push_back({path, host_path_under(root, path), "rw"});
  // Then the IMEX channel nodes (config.imex_channel_ids holds only channels found at start).
  for (int id : config.imex_channel_ids) {
    const std::string path = imex_channel_path(id);
    edits.devices.push_back({path, host_path_under(root, path), "rw"});
  }
}

}  // namespace

ContainerEdits nvidia_device_edits(const Config& config, const Inventory& inventory,
                                   const std::vector<BackingDevice>& devices) {
  ContainerEdits edits;
  const std::vector<std::string> ids = runtime_ids(config, inventory, devices);
  std::vector<std::string> channels;  // IMEX channels every container gets (plan/imex.h)
  for (int id : config.imex_channel_ids) channels.push_back(std::to_string(id));

  if (config.has_strategy(DeviceListStrategy::CdiAnnotations) || config.has_strategy(DeviceListStrategy::CdiCri)) {
    std::vector<std::string> names;
    for (const auto& id : ids) names.push_back(qualified_cdi_name(config.cdi_kind, id));
    for (const auto& ch : channels) names.push_back(qualified_cdi_name(imex_cdi_kind(config), ch));
    if (config.has_strategy(DeviceListStrategy::CdiAnnotations))
      edits.annotations[cdi_annotation_key(config.cdi_annotation_prefix, names)] = join(names, ",");
    if (config.has_strategy(DeviceListStrategy::CdiCri)) edits.cdi_devices = names;
  }
  // NVIDIA 0.20 sets these whatever the strategy; the container toolkit reads them.
  if (config.gds_enabled) edits.envs["NVIDIA_GDS"] = "enabled";
  if (config.mofed_enabled) edits.envs["NVIDIA_MOFED"] = "enabled";
  if (config.gdrcopy_enabled) edits.envs["NVIDIA_GDRCOPY"] = "enabled";

  const bool only_cdi = std::all_of(config.device_list_strategy.begin(), config.device_list_strategy.end(), is_cdi);
  if (only_cdi) {
    // The plugin image (and many workload images) set NVIDIA_VISIBLE_DEVICES=all; with CDI doing the
    // injection, "void" stops a legacy-mode runtime from also handing out every GPU.
    edits.envs[kVisibleDevices] = "void";
  } else {
    if (config.has_strategy(DeviceListStrategy::EnvVar)) {
      edits.envs[kVisibleDevices] = join(ids, ",");
      if (!channels.empty()) edits.envs["NVIDIA_IMEX_CHANNELS"] = join(channels, ",");
    }
    if (config.has_strategy(DeviceListStrategy::VolumeMounts)) {
      edits.envs[kVisibleDevices] = kVolumeMountRoot;
      // The toolkit only lists this folder's entries; the /dev/null bind mounts are markers.
      for (const auto& id : ids) edits.mounts.push_back({std::string(kVolumeMountRoot) + "/" + id, "/dev/null", true});
      for (const auto& ch : channels)
        edits.mounts.push_back({std::string(kVolumeMountRoot) + "/imex/" + ch, "/dev/null", true});
    }
  }
  if (config.pass_device_specs) add_device_specs(config, inventory, devices, edits);
  return edits;
}

}  // namespace kgpu
