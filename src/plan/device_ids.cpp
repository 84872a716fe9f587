#include "plan/device_ids.h"

namespace kgpu {

namespace {
std::string index_id(const Gpu& gpu) { return std::to_string(gpu.index); }
std::string index_id(const Gpu& gpu, const MigDevice& mig) {
  return std::to_string(gpu.index) + ":" + std::to_string(mig.index);
}
}  // namespace

std::string advertised_gpu_id(const Gpu& gpu) { return gpu.uuid.empty() ? index_id(gpu) : gpu.uuid; }

std::string advertised_mig_id(const Gpu& gpu, const MigDevice& mig) {
  return mig.uuid.empty() ? index_id(gpu, mig) : mig.uuid;
}

std::string gpu_device_id(const Config& config, const Gpu& gpu) {
  if (gpu.vendor == Vendor::Nvidia && config.device_id_strategy == DeviceIdStrategy::Index) return index_id(gpu);
  return advertised_gpu_id(gpu);
}

std::string mig_device_id(const Config& config, const Gpu& gpu, const MigDevice& mig) {
  if (config.device_id_strategy == DeviceIdStrategy::Index) return index_id(gpu, mig);
  return advertised_mig_id(gpu, mig);
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
