#include "server/node_discovery.h"

#include <algorithm>

#include "nvml/discovery.h"
#include "nvml/nvml_library.h"
#include "sysfs/backends.h"

namespace kgpu::server {
namespace {
bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}
}  // namespace

std::shared_ptr<NvmlLibrary> NodeDiscovery::nvml() const {
  std::lock_guard lock(mu_);
  return nvml_;
}

Result<Inventory> NodeDiscovery::discover(const Config& config) {
  auto choice = choose_backends(config.backends, probe_node(config));
  if (!choice) return choice.error();
  // NVML is the authority on NVIDIA GPUs, so in auto mode it is tried even when sysfs shows no
  // nvidia module (containers often lack /sys/module); its failure only counts when nothing else
  // was found or the operator forced the backend.
  bool auto_mode = config.backends.empty() || contains(config.backends, "auto");
  bool try_nvidia = choice->nvidia || (auto_mode && !contains(config.backends, "-nvidia"));
  BackendChoice others = *choice;
  others.nvidia = false;
  std::vector<Inventory> parts;
  parts.push_back(discover_sysfs_backends(config, others));
  if (try_nvidia) {
    std::shared_ptr<NvmlLibrary> lib = nvml();
    Status loaded = ok_status();
    if (!lib) {
      auto l = NvmlLibrary::load(config.driver_search_roots());
      if (l) {
        lib = *l;
        std::lock_guard lock(mu_);
        nvml_ = lib;
      } else {
        loaded = l.error();
      }
    }
    Result<Inventory> nvidia = lib ? discover_nvidia(*lib, NvidiaDiscoveryOptions{config.sysfs_root, config.proc_root,
                                                                                   config.dev_root()})
                                   : Result<Inventory>(loaded.error());
    if (nvidia) {
      parts.push_back(std::move(*nvidia));
    } else if (choice->nvidia || parts.front().gpus.empty()) {
      return nvidia.error();
    } else {
      parts.front().warnings.push_back("NVIDIA backend skipped: " + nvidia.error().message);
    }
  }
  return merge(std::move(parts));
}

}  // namespace kgpu::server
