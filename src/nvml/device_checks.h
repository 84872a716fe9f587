#pragma once
// Sanity checks on what NVML reports before kgpu builds an Inventory from it: a device count no
// node can have, and UUIDs that repeat (a broken driver or library; serving both copies would hand
// the same UUID to two containers). Pure, no I/O.
#include <optional>
#include <string>
#include <vector>

namespace kgpu {

// No node carries more GPUs than this; a larger count from nvmlDeviceGetCount is a broken answer.
inline constexpr unsigned kMaxNvidiaDevices = 1024;

// MIG devices per GPU: 7 on every MIG-capable GPU so far; a far larger "max" is a broken answer.
inline constexpr unsigned kMaxMigDevicesPerGpu = 64;

struct DeviceCount {
  unsigned usable = 0;                 // how many indexes discovery walks
  std::optional<std::string> problem;  // set when the reported count was capped
};
DeviceCount check_device_count(unsigned reported);
DeviceCount check_mig_device_count(unsigned reported);

// Positions in `ids` whose value already appeared at an earlier position (the first one is kept).
// Empty ids never count as repeats. Linear time.
std::vector<size_t> repeated_positions(const std::vector<std::string>& ids);

}  // namespace kgpu
