#include "dra/model/slice_limits.h"

#include <algorithm>
#include <regex>

#include "dra/model/device_names.h"

namespace kgpu::dra {

namespace {

size_t entries(const DraDevice& d) { return attribute_and_capacity_count(d); }

// Removes `name` from whichever list of `d` holds it; true when it was there. A GPU-wide attribute
// is removed from this device's own copy only: its GPU's other devices may have room for it.
bool remove_entry(DraDevice& d, std::string_view name) {
  auto named = [&](const auto& e) { return e.name == name; };
  if (std::erase_if(d.attributes, named) > 0) return true;
  if (std::erase_if(d.capacity, named) > 0) return true;
  if (d.gpu_attributes && std::any_of(d.gpu_attributes->begin(), d.gpu_attributes->end(), named)) {
    Attributes copy = *d.gpu_attributes;
    std::erase_if(copy, named);
    d.gpu_attributes = std::make_shared<const Attributes>(std::move(copy));
    return true;
  }
  return false;
}

bool qualified_name(const std::string& name) {
  static const std::regex kCIdentifier("[A-Za-z_][A-Za-z0-9_]*");
  const size_t slash = name.find('/');
  const std::string id = slash == std::string::npos ? name : name.substr(slash + 1);
  if (id.empty() || id.size() > kMaxQualifiedNameIdLength || !std::regex_match(id, kCIdentifier)) return false;
  if (slash == std::string::npos) return true;
  const std::string domain = name.substr(0, slash);
  return domain.size() <= kMaxQualifiedNameDomainLength && is_dns_subdomain(domain);
}

size_t size_of(const nlohmann::json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && (it->is_object() || it->is_array()) ? it->size() : 0;
}

class SliceChecker {
 public:
  std::vector<std::string> check(const nlohmann::json& slice) {
    const auto& spec = slice.value("spec", nlohmann::json::object());
    const auto& devices = spec.value("devices", nlohmann::json::array());
    bool advanced = false;
    for (const auto& d : devices) {
      const auto& f = fields(d);
      advanced = advanced || size_of(f, "taints") > 0 || size_of(f, "consumesCounters") > 0;
      check_device(d);
    }
    const size_t device_limit = advanced ? kMaxSliceDevicesWithTaintsOrCounters : kMaxSliceDevices;
    if (devices.size() > device_limit)
      problems_.push_back(std::to_string(devices.size()) + " devices, over the " + std::to_string(device_limit) +
                          " a slice may hold" + (advanced ? " when a device has taints or counters" : ""));
    check_counter_sets(spec);
    return std::move(problems_);
  }

 private:
  // v1beta1 nests a device's fields under `basic`.
  static const nlohmann::json& fields(const nlohmann::json& d) {
    auto basic = d.find("basic");
    return basic != d.end() && basic->is_object() ? *basic : d;
  }

  void check_device(const nlohmann::json& d) {
    const std::string name = d.value("name", "");
    auto fail = [&](const std::string& what) { problems_.push_back("device " + name + ": " + what); };
    if (!is_dns_label(name)) fail("name is not a DNS label of at most 63 characters");
    const auto& f = fields(d);
    const size_t n = size_of(f, "attributes") + size_of(f, "capacity");
    if (n > kMaxAttributesAndCapacitiesPerDevice)
      fail(std::to_string(n) + " attributes and capacities, over the API's " +
           std::to_string(kMaxAttributesAndCapacitiesPerDevice));
    for (const char* list : {"attributes", "capacity"}) {
      auto it = f.find(list);
      if (it == f.end() || !it->is_object()) continue;
      for (const auto& [key, value] : it->items()) {
        if (!qualified_name(key)) fail(std::string(list) + " name \"" + key + "\" is not a qualified name");
        for (const char* text : {"string", "version"})
          if (value.contains(text) && value[text].is_string() && value[text].get<std::string>().size() > 64)
            fail("attribute " + key + " is longer than 64 characters");
      }
    }
    if (size_of(f, "taints") > kMaxTaintsPerDevice)
      fail(std::to_string(size_of(f, "taints")) + " taints, over the " + std::to_string(kMaxTaintsPerDevice) + " allowed");
    const size_t consumptions = size_of(f, "consumesCounters");
    if (consumptions > kMaxCounterConsumptionsPerDevice)
      fail(std::to_string(consumptions) + " counter consumptions, over the " +
           std::to_string(kMaxCounterConsumptionsPerDevice) + " allowed");
    size_t counters = 0;
    if (auto it = f.find("consumesCounters"); it != f.end() && it->is_array())
      for (const auto& c : *it) counters += size_of(c, "counters");
    if (counters > kMaxCountersPerDevice)
      fail(std::to_string(counters) + " counters consumed, over the " + std::to_string(kMaxCountersPerDevice) + " allowed");
  }

  void check_counter_sets(const nlohmann::json& spec) {
    const size_t sets = size_of(spec, "sharedCounters");
    if (sets > kMaxCounterSetsPerSlice)
      problems_.push_back(std::to_string(sets) + " counter sets, over the " + std::to_string(kMaxCounterSetsPerSlice) +
                          " a slice may hold");
    size_t counters = 0;
    if (auto it = spec.find("sharedCounters"); it != spec.end() && it->is_array())
      for (const auto& set : *it) counters += size_of(set, "counters");
    if (counters > kMaxSharedCountersPerSlice)
      problems_.push_back(std::to_string(counters) + " shared counters, over the " +
                          std::to_string(kMaxSharedCountersPerSlice) + " a slice may hold");
  }

  std::vector<std::string> problems_;
};

}  // namespace

std::vector<std::string> fit_device_to_api_limits(DraDevice& device) {
  std::vector<std::string> notes;
  const size_t before = entries(device);
  std::vector<std::string_view> dropped;
  for (std::string_view extra : kDroppableExtras) {
    if (entries(device) <= kMaxAttributesAndCapacitiesPerDevice) break;
    if (remove_entry(device, extra)) dropped.push_back(extra);
  }
  if (!dropped.empty()) {
    std::string names;
    for (auto n : dropped) names += (names.empty() ? "" : ", ") + std::string(n);
    notes.push_back("device " + device.name + ": " + std::to_string(before) +
                    " attributes and capacities, over the API's " +
                    std::to_string(kMaxAttributesAndCapacitiesPerDevice) + " per device; left out kgpu's " + names);
  }
  if (device.taints.size() > kMaxTaintsPerDevice) {
    notes.push_back("device " + device.name + ": " + std::to_string(device.taints.size()) + " taints; the first " +
                    std::to_string(kMaxTaintsPerDevice) + " are published");
    device.taints.resize(kMaxTaintsPerDevice);
  }
  return notes;
}

size_t attribute_and_capacity_count(const DraDevice& d) {
  return d.attributes.size() + (d.gpu_attributes ? d.gpu_attributes->size() : 0) + d.capacity.size();
}

std::vector<std::string> slice_limit_violations(const nlohmann::json& slice) { return SliceChecker().check(slice); }

}  // namespace kgpu::dra
