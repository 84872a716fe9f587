#pragma once
// `kgpu devices --live`: the causes of the devices the running plugin advertises Unhealthy, read
// from its /metrics (kgpu_device_unhealthy) at the address its config names (--metrics-addr).
#include <chrono>
#include <string>
#include <vector>

#include "core/result.h"
#include "metrics/metrics.h"

namespace kgpu::cli {

// GET /metrics from `metrics_addr` (":9400", "0.0.0.0:9400" and "[::]:9400" are asked on the
// loopback address). Unavailable when nothing answers 200 within `timeout`.
Result<std::vector<DeviceCause>> fetch_device_causes(const std::string& metrics_addr,
                                                     std::chrono::milliseconds timeout);

}  // namespace kgpu::cli
