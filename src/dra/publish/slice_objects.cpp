// How a pool is cut into ResourceSlices and trimmed to what the API server keeps.
#include "dra/publish/slice_objects.h"

#include <algorithm>
#include <map>

#include "dra/model/slice_limits.h"

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

CounterLayout counter_layout_for(int server_major, int server_minor) {
  return server_major > 1 || (server_major == 1 && server_minor >= 35) ? CounterLayout::Split : CounterLayout::Combined;
}

std::vector<SlicePart> slice_parts(const DriverPool& pool, CounterLayout layout) {
  std::map<std::string_view, size_t> set_index;
  for (size_t s = 0; s < pool.counter_sets.size(); ++s) set_index.emplace(pool.counter_sets[s].name, s);
  std::vector<size_t> plain;
  std::vector<std::vector<size_t>> by_set(pool.counter_sets.size());
  bool plain_tainted = false;
  for (size_t i = 0; i < pool.devices.size(); ++i) {
    const DraDevice& d = pool.devices[i];
    auto it = d.consumes_counters.empty() ? set_index.end() : set_index.find(d.consumes_counters.front().counter_set);
    if (it != set_index.end()) {
      by_set[it->second].push_back(i);
      continue;
    }
    plain.push_back(i);
    plain_tainted = plain_tainted || !d.taints.empty() || !d.consumes_counters.empty();
  }
  std::vector<SlicePart> parts;
  // Devices in chunks of `limit`; the first chunk joins `first` (a Combined counter set's slice).
  auto add_devices = [&](const std::vector<size_t>& devices, size_t limit, SlicePart first) {
    size_t k = 0;
    do {
      SlicePart part = k == 0 ? std::move(first) : SlicePart{};
      const size_t end = std::min(devices.size(), k + limit);
      part.devices.assign(devices.begin() + static_cast<std::ptrdiff_t>(k),
                          devices.begin() + static_cast<std::ptrdiff_t>(end));
      parts.push_back(std::move(part));
      k = end;
    } while (k < devices.size());
  };
  if (!plain.empty() || pool.counter_sets.empty())
    add_devices(plain, plain_tainted ? kMaxTaintedDevicesPerSlice : kMaxDevicesPerSlice, {});
  if (layout == CounterLayout::Combined) {
    // A set's devices beyond one slice's limit could not see it under 1.34's rules; no GPU has that
    // many placements (an H100 19), so they are only split to keep the device limit.
    for (size_t s = 0; s < pool.counter_sets.size(); ++s)
      add_devices(by_set[s], kMaxSliceDevicesWithTaintsOrCounters, SlicePart{{s}, {}});
    return parts;
  }
  SlicePart sets;
  size_t counters = 0;
  for (size_t s = 0; s < pool.counter_sets.size(); ++s) {
    const size_t n = pool.counter_sets[s].counters.size();
    if (!sets.counter_sets.empty() &&
        (sets.counter_sets.size() + 1 > kMaxCounterSetsPerSlice || counters + n > kMaxSharedCountersPerSlice)) {
      parts.push_back(std::move(sets));
      sets = {};
      counters = 0;
    }
    sets.counter_sets.push_back(s);
    counters += n;
  }
  if (!sets.counter_sets.empty()) parts.push_back(std::move(sets));
  for (size_t s = 0; s < pool.counter_sets.size(); ++s)
    if (!by_set[s].empty()) add_devices(by_set[s], kMaxSliceDevicesWithTaintsOrCounters, {});
  return parts;
}

bool has_counters(const DriverPool& pool) {
  return !pool.counter_sets.empty() || std::any_of(pool.devices.begin(), pool.devices.end(), [](const DraDevice& d) {
           return !d.consumes_counters.empty();
         });
}

DriverPool with_counter_support(DriverPool pool, bool served) {
  if (served || !has_counters(pool)) return pool;
  // A placement is a device with a parentUUID that consumes counters; the full GPU keeps its place.
  std::erase_if(pool.devices, [](const DraDevice& d) {
    return !d.consumes_counters.empty() && d.attribute("parentUUID") != nullptr;
  });
  for (auto& d : pool.devices) d.consumes_counters.clear();
  pool.counter_sets.clear();
  return pool;
}

}  // namespace kgpu::dra
