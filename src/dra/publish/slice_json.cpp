// Rendering a DriverPool as resource.k8s.io ResourceSlice objects (v1 and v1beta1).
#include "dra/model/publication.h"
#include "dra/publish/slice_objects.h"

namespace kgpu::dra {

namespace {

nlohmann::json attribute_json(const AttributeValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return {{"string", *s}};
  if (const auto* i = std::get_if<int64_t>(&v)) return {{"int", *i}};
  if (const auto* b = std::get_if<bool>(&v)) return {{"bool", *b}};
  return {{"version", std::get<VersionString>(v).value}};
}

nlohmann::json counters_json(const std::vector<Counter>& counters) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& c : counters) out[c.name] = {{"value", binary_si_quantity(c.value)}};
  return out;
}

nlohmann::json device_json(const DraDevice& d, SliceApi api) {
  nlohmann::json attributes = nlohmann::json::object();
  if (d.gpu_attributes)
    for (const auto& a : *d.gpu_attributes) attributes[std::string(a.name)] = attribute_json(a.value);
  for (const auto& a : d.attributes) attributes[std::string(a.name)] = attribute_json(a.value);
  nlohmann::json capacity = nlohmann::json::object();
  for (const auto& c : d.capacity) {
    nlohmann::json entry = {{"value", binary_si_quantity(c.value)}};
    if (const auto& p = c.request_policy)
      entry["requestPolicy"] = {{"default", binary_si_quantity(p->default_value)},
                                {"validRange", {{"min", binary_si_quantity(p->min)}, {"step", binary_si_quantity(p->step)}}}};
    capacity[std::string(c.name)] = std::move(entry);
  }
  nlohmann::json fields = {{"attributes", attributes}, {"capacity", capacity}};
  if (d.allow_multiple_allocations) fields["allowMultipleAllocations"] = true;
  if (!d.consumes_counters.empty()) {
    nlohmann::json consumes = nlohmann::json::array();
    for (const auto& c : d.consumes_counters)
      consumes.push_back({{"counterSet", c.counter_set}, {"counters", counters_json(c.counters)}});
    fields["consumesCounters"] = std::move(consumes);  // v1beta1 (1.33): in basic as well
  }
  if (!d.taints.empty()) {
    nlohmann::json taints = nlohmann::json::array();
    for (const auto& t : d.taints) {
      nlohmann::json taint = {{"key", t.key}, {"effect", std::string(t.effect)}};
      if (!t.value.empty()) taint["value"] = t.value;
      taints.push_back(std::move(taint));
    }
    fields["taints"] = std::move(taints);  // v1beta1: in basic, as attributes and capacity
  }
  if (api == SliceApi::V1beta1) return {{"name", d.name}, {"basic", std::move(fields)}};
  fields["name"] = d.name;
  return fields;
}

}  // namespace

const char* api_version(SliceApi api) {
  return api == SliceApi::V1 ? "resource.k8s.io/v1" : "resource.k8s.io/v1beta1";
}

std::vector<nlohmann::json> resource_slices(const DriverPool& pool, const SliceOptions& options, int64_t generation,
                                            SliceApi api) {
  const auto parts = slice_parts(pool, options.counter_layout);
  const size_t count = parts.size();
  std::vector<nlohmann::json> slices;
  slices.reserve(count);
  for (size_t k = 0; k < count; ++k) {
    nlohmann::json metadata{{"name", options.node_name + "-" + pool.driver + "-" + std::to_string(k)}};
    if (!options.node_uid.empty())
      metadata["ownerReferences"] = nlohmann::json::array({{{"apiVersion", "v1"},
                                                            {"kind", "Node"},
                                                            {"name", options.node_name},
                                                            {"uid", options.node_uid},
                                                            {"controller", true}}});
    nlohmann::json devices = nlohmann::json::array();
    for (size_t i : parts[k].devices) devices.push_back(device_json(pool.devices[i], api));
    nlohmann::json spec = {{"driver", pool.driver},
                           {"nodeName", options.node_name},
                           {"pool", {{"name", pool.pool}, {"generation", generation},
                                     {"resourceSliceCount", static_cast<int64_t>(count)}}},
                           {"devices", devices}};
    if (!parts[k].counter_sets.empty()) {
      nlohmann::json sets = nlohmann::json::array();
      for (size_t s : parts[k].counter_sets)
        sets.push_back({{"name", pool.counter_sets[s].name}, {"counters", counters_json(pool.counter_sets[s].counters)}});
      spec["sharedCounters"] = std::move(sets);
    }
    slices.push_back({{"apiVersion", api_version(api)},
                      {"kind", "ResourceSlice"},
                      {"metadata", metadata},
                      {"spec", std::move(spec)}});
  }
  return slices;
}

}  // namespace kgpu::dra
