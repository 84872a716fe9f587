// Container edits for AMD, Intel and generic devices (the NVIDIA ones are in nvidia_edits.cpp).
//
// AMD: /dev/kfd (once) + each GPU's card and render node, "rw" - what the ROCm plugin hands out.
//   ROCR_VISIBLE_DEVICES is set to the allocated GPUs' UUIDs ("GPU-<kfd unique_id>"), never to
//   indices: inside the container the runtime enumerates only the devices it can open, so indices
//   are renumbered and a host index would name the wrong GPU. UUIDs are stable on both sides. When
//   any allocated device lacks a KFD unique_id, no variable is set (device cgroup + the absent
//   /dev nodes already restrict the runtime to the allocated GPUs).
// Intel: card + render nodes "rw", and the /dev/dri/by-path links read-only (UMDs open them).
// Generic: the group's per-device nodes, its shared nodes once, its mounts and env.
#include <algorithm>
#include <set>

#include "plan/device_edits.h"

namespace kgpu {
namespace {

std::string under(const std::string& root, const std::string& abs) {
  std::string r = root;
  while (!r.empty() && r.back() == '/') r.pop_back();
  return r + (abs.empty() || abs.front() != '/' ? "/" : "") + abs;
}

class EditsBuilder {
 public:
  explicit EditsBuilder(const Config& config) : dev_root_(config.dev_root()) {}

  void device(const std::string& path, const std::string& perms = "rw") {
    if (!device_paths_.insert(path).second) return;
    edits_.devices.push_back({path, under(dev_root_, path), perms});
  }
  void mount(const std::string& container, const std::string& host, bool read_only) {
    if (!mount_paths_.insert(container).second) return;
    edits_.mounts.push_back({container, host, read_only});
  }
  ContainerEdits& edits() { return edits_; }
  const std::string& dev_root() const { return dev_root_; }

 private:
  std::string dev_root_;
  ContainerEdits edits_;
  std::set<std::string> device_paths_, mount_paths_;
};

const GenericDeviceGroup* find_group(const Config& config, const Gpu& gpu) {
  auto it = gpu.attributes.find("resource");
  if (it == gpu.attributes.end()) return nullptr;
  for (const auto& g : config.device_groups)
    if (g.resource == it->second) return &g;
  return nullptr;
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t comma = s.find(',', start);
    std::string part = s.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!part.empty()) out.push_back(part);
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace

ContainerEdits vendor_device_edits(const Config& config, const Inventory& inventory, const Resource& resource,
                                   const std::vector<BackingDevice>& devices) {
  (void)resource;  // the vendor and group come from each backing Gpu, so renamed resources work too
  EditsBuilder b(config);
  std::vector<std::string> rocr_uuids;
  bool all_amd_have_uuid = true, any_amd = false;

  for (const auto& d : devices) {
    if (d.gpu >= inventory.gpus.size()) continue;  // allocate() validated IDs; stay total anyway
    const Gpu& gpu = inventory.gpus[d.gpu];
    switch (gpu.vendor) {
      case Vendor::Amd: {
        any_amd = true;
        b.device("/dev/kfd");
        for (const auto& n : gpu.device_nodes) b.device(n.path);
        auto it = gpu.attributes.find("kfd-unique-id");
        if (it == gpu.attributes.end()) all_amd_have_uuid = false;
        else if (std::find(rocr_uuids.begin(), rocr_uuids.end(), "GPU-" + it->second) == rocr_uuids.end())
          rocr_uuids.push_back("GPU-" + it->second);  // partitions of one GPU may share its ID
        break;
      }
      case Vendor::Intel: {
        for (const auto& n : gpu.device_nodes) b.device(n.path);
        auto it = gpu.attributes.find("by-path-links");
        if (it != gpu.attributes.end())
          for (const auto& link : split_commas(it->second)) {
            const std::string path = "/dev/dri/by-path/" + link;
            b.mount(path, under(b.dev_root(), path), true);
          }
        break;
      }
      case Vendor::Generic: {
        const GenericDeviceGroup* group = find_group(config, gpu);
        const std::string perms = group ? group->permissions : "rw";
        for (const auto& n : gpu.device_nodes) b.device(n.path, perms);
        if (group) {
          for (const auto& s : group->shared_devices) b.device(s, perms);
          for (const auto& m : group->mounts) b.mount(m.container_path, m.host_path, m.read_only);
          for (const auto& [k, v] : group->env) b.edits().envs[k] = v;
        }
        break;
      }
      case Vendor::Nvidia:
        break;  // nvidia_device_edits() owns these
    }
  }
  if (any_amd && all_amd_have_uuid && !rocr_uuids.empty()) {
    std::string v;
    for (const auto& u : rocr_uuids) v += (v.empty() ? "" : ",") + u;
    b.edits().envs["ROCR_VISIBLE_DEVICES"] = v;
  }
  return std::move(b.edits());
}

}  // namespace kgpu
