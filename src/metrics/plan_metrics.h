#pragma once
// Bridges the daemon's plan to the metrics registry: call it from a Daemon::on_plan_changed
// observer. It sets kgpu_devices per resource and health, retires resources the plan no longer
// has (their series leave /metrics) and marks the registry planned for /readyz. With the
// inventory it also records why each Unhealthy device is (kgpu_device_unhealthy).
#include <string>

#include "core/inventory.h"
#include "core/resource_plan.h"
#include "metrics/metrics.h"

namespace kgpu {

void record_plan(Metrics& metrics, const ResourcePlan& plan);
void record_plan(Metrics& metrics, const Inventory& inventory, const ResourcePlan& plan);

// Why `device` is advertised Unhealthy: its MIG instance's or GPU's health reason; a device whose
// hardware is healthy was marked by the plan filter (a running pod holds its GPU under another ID).
std::string unhealthy_cause(const Inventory& inventory, const AdvertisedDevice& device);

}  // namespace kgpu
