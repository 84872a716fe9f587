#include "metrics/plan_metrics.h"

#include <algorithm>

namespace kgpu {

void record_plan(Metrics& metrics, const ResourcePlan& plan) {
  for (const auto& resource : plan.resources) {
    const auto healthy = static_cast<uint64_t>(
        std::count_if(resource.devices.begin(), resource.devices.end(), [](const auto& d) { return d.healthy; }));
    metrics.resource(resource.name).set_devices(healthy, resource.devices.size() - healthy);
  }
  for (const auto& name : metrics.active_resources()) {
    if (plan.find(name) == nullptr) metrics.retire_resource(name);
  }
  metrics.mark_planned();
}

}  // namespace kgpu
