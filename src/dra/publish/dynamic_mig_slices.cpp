#include "dra/publish/dynamic_mig_slices.h"

#include "dra/model/publication.h"
#include "dra/model/slice_limits.h"

namespace kgpu::dra {
namespace {

nlohmann::json counters_json(const std::vector<Counter>& counters) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& c : counters) out[c.name] = {{"value", binary_si_quantity(c.value)}};
  return out;
}

nlohmann::json device_json(const DynamicMigLayout& gpu, const DynamicMigDevice& d, const nlohmann::json& shared) {
  nlohmann::json attributes = shared.is_object() ? shared : nlohmann::json::object();
  if (d.profile.empty()) {
    attributes["type"] = {{"string", "gpu"}};
    attributes["uuid"] = {{"string", gpu.gpu_uuid}};
  } else {
    attributes["type"] = {{"string", "mig"}};
    attributes["parentUUID"] = {{"string", gpu.gpu_uuid}};
    attributes["profile"] = {{"string", d.profile}};
  }
  nlohmann::json capacity = nlohmann::json::object();
  for (const auto& c : d.capacity) capacity[c.name] = {{"value", binary_si_quantity(c.value)}};
  return {{"name", d.name},
          {"attributes", std::move(attributes)},
          {"capacity", std::move(capacity)},
          {"consumesCounters",
           nlohmann::json::array({{{"counterSet", gpu.counter_set}, {"counters", counters_json(d.consumes)}}})}};
}

nlohmann::json counter_set_json(const DynamicMigLayout& gpu) {
  return {{"name", gpu.counter_set}, {"counters", counters_json(gpu.counters)}};
}

// Counter sets packed into as few slices as the limits allow, in GPU order.
std::vector<nlohmann::json> pack_counter_sets(const std::vector<DynamicMigLayout>& gpus) {
  std::vector<nlohmann::json> groups;
  nlohmann::json current = nlohmann::json::array();
  size_t counters = 0;
  for (const auto& g : gpus) {
    if (g.counters.empty()) continue;
    if (!current.empty() &&
        (current.size() + 1 > kMaxCounterSetsPerSlice || counters + g.counters.size() > kMaxSharedCountersPerSlice)) {
      groups.push_back(std::move(current));
      current = nlohmann::json::array();
      counters = 0;
    }
    current.push_back(counter_set_json(g));
    counters += g.counters.size();
  }
  if (!current.empty()) groups.push_back(std::move(current));
  return groups;
}

}  // namespace

CounterLayout counter_layout_for(int server_major, int server_minor) {
  return server_major > 1 || (server_major == 1 && server_minor >= 35) ? CounterLayout::Split : CounterLayout::Combined;
}

std::vector<nlohmann::json> dynamic_mig_slices(const std::vector<DynamicMigLayout>& gpus,
                                               const DynamicMigSliceOptions& options) {
  std::vector<nlohmann::json> specs;  // spec bodies first: resourceSliceCount needs their number
  auto shared_of = [&](const DynamicMigLayout& g) {
    auto it = options.gpu_attributes.find(g.gpu_uuid);
    return it != options.gpu_attributes.end() ? *it : nlohmann::json::object();
  };
  auto devices_of = [&](const DynamicMigLayout& g) {
    nlohmann::json devices = nlohmann::json::array();
    const nlohmann::json shared = shared_of(g);
    for (const auto& d : g.devices) devices.push_back(device_json(g, d, shared));
    return devices;
  };
  if (options.layout == CounterLayout::Split) {
    for (auto& sets : pack_counter_sets(gpus)) specs.push_back({{"sharedCounters", std::move(sets)}});
    for (const auto& g : gpus)
      if (!g.devices.empty()) specs.push_back({{"devices", devices_of(g)}});
  } else {
    for (const auto& g : gpus) {
      if (g.devices.empty()) continue;
      nlohmann::json spec = {{"devices", devices_of(g)}};
      if (!g.counters.empty()) spec["sharedCounters"] = nlohmann::json::array({counter_set_json(g)});
      specs.push_back(std::move(spec));
    }
  }
  std::vector<nlohmann::json> slices;
  for (size_t k = 0; k < specs.size(); ++k) {
    nlohmann::json spec = std::move(specs[k]);
    spec["driver"] = options.driver;
    spec["nodeName"] = options.node_name;
    spec["pool"] = {{"name", options.node_name},
                    {"generation", options.generation},
                    {"resourceSliceCount", static_cast<int64_t>(specs.size())}};
    if (!spec.contains("devices")) spec["devices"] = nlohmann::json::array();
    slices.push_back({{"apiVersion", "resource.k8s.io/v1"},
                      {"kind", "ResourceSlice"},
                      {"metadata", {{"name", options.node_name + "-" + options.driver + "-mig-" + std::to_string(k)}}},
                      {"spec", std::move(spec)}});
  }
  return slices;
}

}  // namespace kgpu::dra
