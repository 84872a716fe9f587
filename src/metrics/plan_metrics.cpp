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

std::string unhealthy_cause(const Inventory& inventory, const AdvertisedDevice& device) {
  if (device.gpu < inventory.gpus.size()) {
    const Gpu& gpu = inventory.gpus[device.gpu];
    if (device.mig && *device.mig < gpu.mig_devices.size()) {
      const auto& mig = gpu.mig_devices[*device.mig];
      if (!mig.health.healthy && !mig.health.reason.empty()) return mig.health.reason;
    }
    if (!gpu.health.healthy && !gpu.health.reason.empty()) return gpu.health.reason;
  }
  return "held: a running pod holds this GPU under a previous config's device ID";
}

void record_plan(Metrics& metrics, const Inventory& inventory, const ResourcePlan& plan) {
  std::vector<DeviceCause> causes;
  for (const auto& resource : plan.resources)
    for (const auto& d : resource.devices)
      if (!d.healthy) causes.push_back({resource.name, d.id, unhealthy_cause(inventory, d)});
  metrics.set_unhealthy_devices(std::move(causes));
  record_plan(metrics, plan);
}

}  // namespace kgpu
