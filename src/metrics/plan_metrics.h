#pragma once
// Bridges the daemon's plan to the metrics registry: call it from a Daemon::on_plan_changed
// observer. It sets kgpu_devices per resource and health, retires resources the plan no longer
// has (their series leave /metrics) and marks the registry planned for /readyz.
#include "core/resource_plan.h"
#include "metrics/metrics.h"

namespace kgpu {

void record_plan(Metrics& metrics, const ResourcePlan& plan);

}  // namespace kgpu
