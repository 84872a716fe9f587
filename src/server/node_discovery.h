#pragma once
// NodeDiscovery: the daemon's one call to turn the node into an Inventory. Runs the NVIDIA
// backend (NVML loaded once through the configured driver root, then kept) and the sysfs
// backends chosen by Config::backends, and merges them.
#include <memory>
#include <mutex>

#include "config/config.h"
#include "core/inventory.h"
#include "core/result.h"

namespace kgpu {
class NvmlLibrary;
}

namespace kgpu::server {

class NodeDiscovery {
 public:
  // Error when the NVIDIA backend is wanted (forced, or "auto" with nothing else found) and NVML
  // cannot be loaded or initialised; the message says which library paths were tried and why.
  Result<Inventory> discover(const Config& config);
  // The NVML library once loaded (for the health monitor); null before a successful load.
  std::shared_ptr<NvmlLibrary> nvml() const;

 private:
  mutable std::mutex mu_;
  std::shared_ptr<NvmlLibrary> nvml_;
};

}  // namespace kgpu::server
