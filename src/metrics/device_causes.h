#pragma once
// Reading back what the daemon publishes on /metrics about devices it does not advertise as
// Healthy: `kgpu devices --live` fetches the running plugin's /metrics and shows each Unhealthy
// device's cause from the kgpu_device_unhealthy series (the device-plugin API has no field for it).
#include <string_view>
#include <vector>

#include "core/result.h"
#include "metrics/metrics.h"

namespace kgpu {

// The kgpu_device_unhealthy series of a Prometheus text exposition (other lines are skipped).
// InvalidArgument, naming the line, when such a series is malformed (labels unterminated, a bad
// escape, a label missing).
Result<std::vector<DeviceCause>> parse_device_causes(std::string_view exposition);

}  // namespace kgpu
