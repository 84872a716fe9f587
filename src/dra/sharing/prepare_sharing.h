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
#include <vector>

#include <nlohmann/json.hpp>

#include "core/quantity.h"
#include "core/result.h"

namespace kgpu::dra {

inline constexpr std::string_view kNvidiaConfigApiVersion = "resource.nvidia.com/v1beta1";

// nvidia-smi compute-policy --set-timeslice values.
enum class TimeSliceInterval { Default = 0, Short = 1, Medium = 2, Long = 3 };
const char* to_string(TimeSliceInterval interval);  // "Default", "Short", ...

struct MpsConfig {
  // 0..100, as NVIDIA validates it; 0 is a setting like any other (NVIDIA's daemon gets
  // "set_default_active_thread_percentage 0"), only a missing field leaves MPS's default.
  std::optional<int> active_thread_percentage;
  std::optional<uint64_t> pinned_memory_bytes;         // every device the config applies to
  // Key as written: the UUID of a device the config applies to, or an index into those devices
  // sorted by UUID (not the node's NVML index); see mps_pinned_limits().
  std::map<std::string, uint64_t> per_device_pinned;
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
// field, an unknown strategy or interval, a timeSlicingConfig without an interval (NVIDIA's driver
// fails on one), a config section that does not match the strategy, a percentage outside 0..100, a
// memory limit that is not a quantity or is under 1 MiB (NVIDIA's "value set too low": MPS takes
// whole MiB, rounded down). A TimeSlicing sharing without timeSlicingConfig is interval Default,
// as NVIDIA's Normalize makes it.
Result<DeviceConfig> parse_device_config(const nlohmann::json& parameters);

// NVIDIA's MpsPerDevicePinnedMemoryLimit.Normalize: the pinned memory limit in bytes of each device
// one MPS config applies to (its "group": the claim's devices that chose this config entry), keyed
// by UUID. The default limit applies to every device; a defaultPerDevicePinnedMemoryLimit key then
// overrides one device: a key equal to one of `device_uuids` is that device, else it must be a
// decimal integer (Go's strconv.Atoi: optional sign, digits) indexing the group's UUIDs sorted
// bytewise. An unknown UUID, a key that is no integer, an index out of range, and two keys naming
// one device with different limits (NVIDIA's outcome depends on Go's map order) are Error::invalid
// naming the key.
Result<std::map<std::string, uint64_t>> mps_pinned_limits(const MpsConfig& mps, std::vector<std::string> device_uuids);

// Kubernetes quantities as bytes: core/quantity.h (shared with the config checks).
using kgpu::parse_quantity_bytes;

}  // namespace kgpu::dra
