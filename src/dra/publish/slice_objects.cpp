// How a pool is cut into ResourceSlices and trimmed to what the API server keeps.
#include "dra/publish/slice_objects.h"

#include <algorithm>

namespace kgpu::dra {

size_t max_devices_per_slice(const DriverPool& pool) {
  const bool tainted = std::any_of(pool.devices.begin(), pool.devices.end(), [](const DraDevice& d) { return !d.taints.empty(); });
  return tainted ? kMaxTaintedDevicesPerSlice : kMaxDevicesPerSlice;
}

const char* to_string(TaintSupport support) {
  switch (support) {
    case TaintSupport::Full: return "full";
    case TaintSupport::NoInformational: return "without effect None";
    case TaintSupport::Off: return "off";
  }
  return "unknown";
}

DriverPool with_taint_support(DriverPool pool, TaintSupport support) {
  if (support == TaintSupport::Full) return pool;
  auto informational = [](const DeviceTaint& t) { return t.effect == kTaintNone; };
  if (support == TaintSupport::Off)
    std::erase_if(pool.devices, [&](const DraDevice& d) { return !std::all_of(d.taints.begin(), d.taints.end(), informational); });
  for (auto& d : pool.devices) {
    if (support == TaintSupport::Off) d.taints.clear();
    else std::erase_if(d.taints, informational);
  }
  return pool;
}

bool has_shared_devices(const DriverPool& pool) {
  return std::any_of(pool.devices.begin(), pool.devices.end(),
                     [](const DraDevice& d) { return d.allow_multiple_allocations; });
}

DriverPool with_share_support(DriverPool pool, bool served) {
  if (served) return pool;
  for (auto& d : pool.devices) {
    if (!d.allow_multiple_allocations) continue;
    d.allow_multiple_allocations = false;
    set_device_type(d, kWholeGpuType);
    std::erase_if(d.capacity, [](const Capacity& c) { return c.name == "multiprocessors" && c.request_policy; });
    for (auto& c : d.capacity) c.request_policy.reset();
  }
  return pool;
}

}  // namespace kgpu::dra
