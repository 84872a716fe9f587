#pragma once
// The DRA face of the inventory as plain values: what one driver publishes in its node's pool,
// independent of the resource.k8s.io API version that carries it. Comparing two DriverPools says
// whether anything must be written to the API server.
//
// Laid out for the health-event path (issue 15: slice rebuild < 100 us for 16 GPUs with MIG): names
// are string literals from the fixed attribute vocabulary (no copies), attributes and capacities
// are sorted vectors (one allocation each), and the facts a MIG device shares with its GPU are
// built once per GPU and shared.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace kgpu::dra {

// A ResourceSlice DeviceAttribute holds exactly one of these. Version is a semver 2.0.0 string.
struct VersionString {
  std::string value;
  bool operator==(const VersionString&) const = default;
};
using AttributeValue = std::variant<std::string, int64_t, bool, VersionString>;

// Qualified names: unqualified ones belong to the driver's domain ("uuid"), others carry their own
// ("resource.kubernetes.io/pcieRoot"). `name` must point at a string literal.
struct Attribute {
  std::string_view name;
  AttributeValue value;
  bool operator==(const Attribute&) const = default;
};
using Attributes = std::vector<Attribute>;  // sorted by name, names unique

// requestPolicy of a consumable capacity (DRAConsumableCapacity, on a device published with
// allowMultipleAllocations): what a request that names no amount consumes, and the valid amounts
// min, min + step, ... up to the capacity (the scheduler rounds a request up to one).
struct CapacityRequestPolicy {
  uint64_t default_value = 0;
  uint64_t min = 0;
  uint64_t step = 0;
  bool operator==(const CapacityRequestPolicy&) const = default;
};

struct Capacity {
  std::string_view name;  // a string literal
  uint64_t value;         // published as a BinarySI quantity
  std::optional<CapacityRequestPolicy> request_policy{};
  bool operator==(const Capacity&) const = default;
};

// A device taint (KEP-5055, resource.k8s.io DeviceTaint): why the scheduler should keep pods off the
// device (NoSchedule), evict the pods using it (NoExecute), or only tell (None). The API server sets
// timeAdded; kgpu never writes it.
struct DeviceTaint {
  std::string key;          // "gpu.nvidia.com/xid"
  std::string value;        // "79"; empty is left out
  std::string_view effect;  // kTaintNoSchedule, kTaintNoExecute or kTaintNone (literals)
  bool operator==(const DeviceTaint&) const = default;
};
inline constexpr std::string_view kTaintNoSchedule = "NoSchedule";
inline constexpr std::string_view kTaintNoExecute = "NoExecute";
inline constexpr std::string_view kTaintNone = "None";

// A counter of a shared counter set, or an amount a device consumes of one (KEP-4815, partitionable
// devices): dynamic MIG's "multiprocessors", "memory-slice-3". Names are DNS labels (hyphens), unlike
// capacity names.
struct Counter {
  std::string name;
  uint64_t value = 0;  // published as a BinarySI quantity
  bool operator==(const Counter&) const = default;
};

// A slice's sharedCounters entry: one GPU's counters the devices of its pool draw from.
struct CounterSet {
  std::string name;               // "gpu-0-counter-set"
  std::vector<Counter> counters;  // sorted by name (byte order, as JSON keys are written)
  bool operator==(const CounterSet&) const = default;
};

// A device's consumesCounters entry: what it takes of one counter set while allocated.
struct CounterConsumption {
  std::string counter_set;
  std::vector<Counter> counters;  // sorted by name
  bool operator==(const CounterConsumption&) const = default;
};

struct DraDevice {
  std::string name;  // DNS label, unique in the pool ("gpu-0", "gpu-0-mig-1g5gb-13-0")
  // Attributes shared with the other devices of the same GPU (product, versions, PCI, island); may
  // be null. Never repeats a name of `attributes`.
  std::shared_ptr<const Attributes> gpu_attributes;
  Attributes attributes;          // the device's own
  std::vector<Capacity> capacity;  // sorted by name
  // Published with allowMultipleAllocations (consumable capacity): only then may a claim hold a
  // share of it (a result with a shareID). Full GPUs of kgpu.dra.sharing.memory.gpus are.
  bool allow_multiple_allocations = false;
  // Health as taints (sorted by key, one per key): an unhealthy device stays published with the
  // reason, and an XID the policy ignores shows as a None taint. Empty for a healthy device.
  std::vector<DeviceTaint> taints{};
  // Dynamic MIG (issue 42): the counters of the pool's counter sets the device takes, so the
  // scheduler never allocates two overlapping placements, or a placement and its whole GPU.
  std::vector<CounterConsumption> consumes_counters{};

  // Either list; nullptr when absent.
  const AttributeValue* attribute(std::string_view attribute_name) const {
    for (const Attributes* list : {gpu_attributes.get(), &attributes}) {
      if (!list) continue;
      auto it = std::lower_bound(list->begin(), list->end(), attribute_name,
                                 [](const Attribute& a, std::string_view n) { return a.name < n; });
      if (it != list->end() && it->name == attribute_name) return &it->value;
    }
    return nullptr;
  }
  const uint64_t* capacity_of(std::string_view capacity_name) const {
    for (const auto& c : capacity)
      if (c.name == capacity_name) return &c.value;
    return nullptr;
  }
  bool operator==(const DraDevice& o) const {
    const bool same_gpu = gpu_attributes == o.gpu_attributes ||
                          (gpu_attributes && o.gpu_attributes && *gpu_attributes == *o.gpu_attributes);
    return name == o.name && same_gpu && attributes == o.attributes && capacity == o.capacity &&
           allow_multiple_allocations == o.allow_multiple_allocations && taints == o.taints &&
           consumes_counters == o.consumes_counters;
  }
};

// Sets the device's `type` attribute (a shareable GPU goes out as "gpu" where the server keeps no
// shares).
inline void set_device_type(DraDevice& d, std::string_view type) {
  for (auto& a : d.attributes)
    if (a.name == "type") a.value = std::string(type);
}

// Everything one driver publishes for one node: a single pool named after the node.
struct DriverPool {
  std::string driver;  // "gpu.nvidia.com"
  std::string pool;    // the node name
  std::vector<DraDevice> devices;
  // Shared counter sets (dynamic MIG: one per GPU) the devices' consumes_counters name.
  std::vector<CounterSet> counter_sets{};
  bool operator==(const DriverPool&) const = default;
};

}  // namespace kgpu::dra
