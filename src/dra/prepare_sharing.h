#pragma once
// The opaque device config a claim (or its DeviceClass) passes to the NVIDIA driver, decoded the way
// NVIDIA's DRA driver decodes it (API resource.nvidia.com/v1beta1, strict: an unknown field is an
// error), so claims written for it ask kgpu for the same sharing:
//   {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
//    "sharing": {"strategy": "TimeSlicing", "timeSlicingConfig": {"interval": "Long"}}}
//   {"apiVersion": "resource.nvidia.com/v1beta1", "kind": "GpuConfig",
//    "sharing": {"strategy": "MPS", "mpsConfig": {"defaultActiveThreadPercentage": 50,
//                "defaultPinnedDeviceMemoryLimit": "10Gi",
//                "defaultPerDevicePinnedMemoryLimit": {"0": "5Gi"}}}}
// MigDeviceConfig takes the same sharing without a time-slice interval. Pure.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace kgpu::dra {

inline constexpr std::string_view kNvidiaConfigApiVersion = "resource.nvidia.com/v1beta1";

// nvidia-smi compute-policy --set-timeslice values.
enum class TimeSliceInterval { Default = 0, Short = 1, Medium = 2, Long = 3 };
const char* to_string(TimeSliceInterval interval);  // "Default", "Short", ...

struct MpsConfig {
  std::optional<int> active_thread_percentage;         // 1..100
  std::optional<uint64_t> pinned_memory_bytes;         // every device of the claim
  std::map<std::string, uint64_t> per_device_pinned;   // key: GPU index ("0") or UUID, as written
  bool operator==(const MpsConfig&) const = default;
};

struct DeviceSharing {
  enum class Strategy { Exclusive, TimeSlicing, Mps };
  Strategy strategy = Strategy::Exclusive;  // no sharing section: the device as it is
  TimeSliceInterval interval = TimeSliceInterval::Default;  // TimeSlicing on a full GPU
  MpsConfig mps;                                            // Mps
  bool operator==(const DeviceSharing&) const = default;
};

struct DeviceConfig {
  enum class Kind { Gpu, Mig };  // GpuConfig applies to full GPUs, MigDeviceConfig to MIG devices
  Kind kind = Kind::Gpu;
  DeviceSharing sharing;
  bool operator==(const DeviceConfig&) const = default;
};

// Decodes `parameters` of one opaque config. Errors (Error::invalid) name the field: not an object,
// another apiVersion, a kind kgpu does not serve (VfioDeviceConfig, ComputeDomain*), an unknown
// field, an unknown strategy or interval, a config section that does not match the strategy, a
// percentage outside 1..100, a memory limit that is not a positive quantity.
Result<DeviceConfig> parse_device_config(const nlohmann::json& parameters);

// A Kubernetes resource.Quantity of bytes: digits with an optional fraction and suffix (Ki Mi Gi Ti
// Pi Ei, k M G T P E), or a JSON number. "10Gi" -> 10737418240, "1.5G" -> 1500000000. Fractions of
// a byte are rounded up, as Kubernetes does. Errors: empty, malformed, negative, over 2^63.
Result<uint64_t> parse_quantity_bytes(std::string_view text);

}  // namespace kgpu::dra
