#include "nvml/device_checks.h"

#include <unordered_set>

namespace kgpu {

DeviceCount check_device_count(unsigned reported) {
  if (reported <= kMaxNvidiaDevices) return {reported, std::nullopt};
  return {kMaxNvidiaDevices, "NVML reports " + std::to_string(reported) + " GPUs, more than any node has (at most " +
                                 std::to_string(kMaxNvidiaDevices) + " are read)"};
}

DeviceCount check_mig_device_count(unsigned reported) {
  if (reported <= kMaxMigDevicesPerGpu) return {reported, std::nullopt};
  return {kMaxMigDevicesPerGpu, "NVML reports room for " + std::to_string(reported) +
                                    " MIG devices on one GPU, more than any GPU has (at most " +
                                    std::to_string(kMaxMigDevicesPerGpu) + " are read)"};
}

std::vector<size_t> repeated_positions(const std::vector<std::string>& ids) {
  std::vector<size_t> out;
  std::unordered_set<std::string> seen;
  seen.reserve(ids.size());
  for (size_t i = 0; i < ids.size(); ++i)
    if (!ids[i].empty() && !seen.insert(ids[i]).second) out.push_back(i);
  return out;
}

}  // namespace kgpu
