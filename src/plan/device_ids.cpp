#include "plan/device_ids.h"

namespace kgpu {

std::string gpu_device_id(const Config& config, const Gpu& gpu) {
  const bool index = gpu.vendor == Vendor::Nvidia ? config.device_id_strategy == DeviceIdStrategy::Index
                                                  : gpu.uuid.empty();
  return index ? std::to_string(gpu.index) : gpu.uuid;
}

std::string mig_device_id(const Config& config, const Gpu& gpu, const MigDevice& mig) {
  if (config.device_id_strategy == DeviceIdStrategy::Index)
    return std::to_string(gpu.index) + ":" + std::to_string(mig.index);
  return mig.uuid;
}

std::string replica_id(std::string_view base, int replica) {
  std::string id;
  id.reserve(base.size() + 6);
  id.append(base).append("::").append(std::to_string(replica));
  return id;
}

std::string_view strip_replica(std::string_view id) {
  const auto pos = id.rfind("::");
  return pos == std::string_view::npos ? id : id.substr(0, pos);
}

}  // namespace kgpu
