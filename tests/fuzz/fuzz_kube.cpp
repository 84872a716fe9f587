// Fuzz target: what kgpu reads from the API server. Two passes per input:
//  - raw: the input as the answer to a GET of the Node, then line by line as a watch stream (as
//    NodeWatcher splits it);
//  - typed: the input drives a generator that writes a Node / watch event in which any field may
//    have any JSON type (a number for "kind", a string for "code", an object for a label value):
//    the mistakes a real server, a proxy or an attacker makes, which raw byte mutation rarely hits.
// The labels of every Node that parsed go through the per-node config choice. The same input (raw,
// then typed) is also read as a ResourceSliceList, as the resource.k8s.io discovery answer and, line
// by line, as a watch of ResourceSlices (what the DRA slice publisher reads). Any answer gives a
// value or an Error.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_json.h"

#include "kube/node_config.h"
#include "kube/node_object.h"
#include "kube/resource_slice_list.h"

namespace {

using nlohmann::json;

const kgpu::kube::NodeConfigSource kSource{"node-1", "nvidia.com/device-plugin.config", "/config", "default"};

// A label value picks a file in the config folder, or the default: never a path elsewhere.
void choose(const kgpu::kube::NodeSnapshot& node) {
  for (bool exists : {false, true}) {
    auto choice = kgpu::kube::choose_node_config(node.labels, kSource, [exists](const std::string&) { return exists; });
    if (choice.file.empty()) continue;
    if (!choice.file.starts_with(kSource.config_dir + "/")) __builtin_trap();
    const std::string_view name = std::string_view(choice.file).substr(kSource.config_dir.size() + 1);
    if (name.empty() || name.find('/') != std::string_view::npos || name == "." || name == "..") __builtin_trap();
  }
}

// A list that parsed names every slice, and the generation it reports is the one in its spec.
void read_slices(std::string_view text) {
  if (auto list = kgpu::kube::parse_resource_slice_list(text)) {
    for (const auto& slice : list->items) {
      if (slice.name.empty() || !slice.spec.is_object()) __builtin_trap();
      const auto pool = slice.spec.find("pool");
      if (pool == slice.spec.end() || !pool->is_object()) __builtin_trap();
      const auto generation = pool->find("generation");
      if (generation != pool->end() && generation->is_number_integer() &&
          generation->get<int64_t>() != slice.generation)
        __builtin_trap();
    }
  }
  if (auto versions = kgpu::kube::parse_api_group_versions(text)) (void)versions->size();
}

void parse_answer(std::string_view text) {
  read_slices(text);
  if (auto node = kgpu::kube::parse_node(text)) choose(*node);
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    const std::string_view line = text.substr(start, end - start);
    if (!line.empty()) {
      if (auto event = kgpu::kube::parse_watch_event(line)) choose(event->node);
      // A slice event names its driver exactly when it carries a slice.
      if (auto event = kgpu::kube::parse_slice_watch_event(line))
        if (event->driver.empty() != (event->type == "BOOKMARK" || event->type == "ERROR")) __builtin_trap();
    }
    start = end + 1;
  }
}

const char* const kWords[] = {"Node", "Status", "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR", "v1",
                              "nvidia.com/device-plugin.config", "default", "..", "a/b", "", "ResourceSliceList",
                              "gpu.nvidia.com", "v1beta1"};

json any_value(FuzzedDataProvider& in, int depth) { return kgpu::fuzz::any_json(in, depth, kWords); }

void field(FuzzedDataProvider& in, json& object, const char* key, const json& expected) {
  kgpu::fuzz::maybe_field(in, object, key, expected, kWords);
}

json node_object(FuzzedDataProvider& in) {
  json labels = json::object();
  for (int n = in.ConsumeIntegralInRange<int>(0, 3); n > 0; --n) {
    std::string key = in.ConsumeBool() ? kSource.label : in.ConsumeRandomLengthString(16);
    labels[key] = in.ConsumeBool() ? json(in.ConsumeRandomLengthString(16)) : any_value(in, 1);
  }
  json metadata = json::object();
  field(in, metadata, "name", "node-1");
  field(in, metadata, "resourceVersion", std::to_string(in.ConsumeIntegral<uint32_t>()));
  field(in, metadata, "labels", labels);
  json node = json::object();
  field(in, node, "kind", "Node");
  field(in, node, "apiVersion", "v1");
  field(in, node, "metadata", metadata);
  field(in, node, "code", 410);
  return node;
}

std::string typed_answer(FuzzedDataProvider& in) {
  std::string text;
  for (int n = in.ConsumeIntegralInRange<int>(1, 3); n > 0; --n) {
    json event = json::object();
    field(in, event, "type", kWords[in.ConsumeIntegralInRange<size_t>(2, 6)]);
    field(in, event, "object", node_object(in));
    json doc = in.ConsumeBool() ? event : node_object(in);
    text += doc.dump(-1, ' ', false, json::error_handler_t::replace) + "\n";
  }
  return text;
}

json slice_object(FuzzedDataProvider& in) {
  json pool = json::object();
  field(in, pool, "name", "node-1");
  field(in, pool, "generation", in.ConsumeIntegral<int64_t>());
  field(in, pool, "resourceSliceCount", in.ConsumeIntegralInRange<int64_t>(-1, 3));
  json spec = json::object();
  field(in, spec, "driver", "gpu.nvidia.com");
  field(in, spec, "nodeName", "node-1");
  field(in, spec, "pool", pool);
  field(in, spec, "devices", json::array({{{"name", "gpu-0"}}}));
  json metadata = json::object();
  field(in, metadata, "name", in.ConsumeRandomLengthString(16));
  field(in, metadata, "resourceVersion", std::to_string(in.ConsumeIntegral<uint32_t>()));
  field(in, metadata, "ownerReferences", json::array({{{"kind", "Node"}, {"uid", "u"}}}));
  json slice = json::object();
  field(in, slice, "metadata", metadata);
  field(in, slice, "spec", spec);
  return slice;
}

// A ResourceSliceList or an APIGroup in which any field may be missing or of any type.
std::string typed_slice_answer(FuzzedDataProvider& in) {
  json items = json::array();
  for (int n = in.ConsumeIntegralInRange<int>(0, 3); n > 0; --n) items.push_back(slice_object(in));
  json metadata = json::object();
  field(in, metadata, "continue", in.ConsumeRandomLengthString(8));
  json versions = json::array();
  for (int n = in.ConsumeIntegralInRange<int>(0, 2); n > 0; --n) {
    json v = json::object();
    field(in, v, "version", kWords[in.ConsumeIntegralInRange<size_t>(13, 15)]);
    versions.push_back(v);
  }
  json doc = json::object();
  field(in, doc, "kind", "ResourceSliceList");
  field(in, doc, "metadata", metadata);
  field(in, doc, "items", items);
  field(in, doc, "versions", versions);
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  parse_answer(std::string_view(reinterpret_cast<const char*>(data), size));
  FuzzedDataProvider in(data, size);
  parse_answer(typed_answer(in));
  read_slices(typed_slice_answer(in));
  return 0;
}
