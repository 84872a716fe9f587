// Fuzz target: what kgpu reads from the API server for GFD's NodeFeature output (issue 41, item 4):
// the node's NodeFeature (GET before create or update) and the daemon's own Pod (its owners). Raw
// bytes first, then objects built from the input in which any field may have any JSON type (the
// mistakes a real server, a proxy or an attacker makes). Any answer gives a value or an Error. What
// parsed is used as the writer uses it (compared, turned into the update body); and an object kgpu
// writes itself, with labels from the input, parses back to exactly what it was written with.
#include <fuzzer/FuzzedDataProvider.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz/fuzz_json.h"

#include "kube/node_feature.h"

namespace {

using nlohmann::json;
using kgpu::kube::NodeFeaturePlace;
using kgpu::kube::OwnerRef;

const NodeFeaturePlace kPlace{"kube-system", "node-1"};
const std::vector<OwnerRef> kOwners{{"apps/v1", "DaemonSet", "kgpu", "ds", true}, {"v1", "Pod", "kgpu-x", "p", false}};

const char* const kWords[] = {"NodeFeature", "Pod", "DaemonSet", "Node", "apps/v1", "v1", "nfd.k8s-sigs.io/v1alpha1",
                              "nfd.node.kubernetes.io/node-name", "node-1", "", "elements", "attributes"};

void read(std::string_view text) {
  if (auto state = kgpu::kube::parse_node_feature(text)) {
    const bool same = kgpu::kube::node_feature_matches(*state, kPlace, state->labels, state->owners);
    if (same && (state->node_label != kPlace.node || !state->features_empty)) __builtin_trap();
    const json update = kgpu::kube::node_feature_update(*state, kPlace, state->labels, kOwners);
    if (update["metadata"]["resourceVersion"] != state->resource_version) __builtin_trap();
    (void)update.dump(-1, ' ', false, json::error_handler_t::replace);
  }
  if (auto owners = kgpu::kube::owners_from_pod(text)) {
    if (owners->empty() || owners->back().kind != "Pod" || owners->back().uid.empty()) __builtin_trap();
    if (owners->size() == 2 && !owners->front().controller) __builtin_trap();
  }
}

json any_value(FuzzedDataProvider& in, int depth) { return kgpu::fuzz::any_json(in, depth, kWords); }

void field(FuzzedDataProvider& in, json& object, const char* key, const json& expected) {
  kgpu::fuzz::maybe_field(in, object, key, expected, kWords);
}

json owner(FuzzedDataProvider& in) {
  json ref = json::object();
  field(in, ref, "apiVersion", "apps/v1");
  field(in, ref, "kind", in.ConsumeBool() ? "DaemonSet" : "ReplicaSet");
  field(in, ref, "name", "kgpu");
  field(in, ref, "uid", in.ConsumeRandomLengthString(8));
  field(in, ref, "controller", in.ConsumeBool());
  return ref;
}

std::string typed(FuzzedDataProvider& in) {
  json labels = json::object();
  for (int n = in.ConsumeIntegralInRange<int>(0, 3); n > 0; --n)
    labels[in.ConsumeRandomLengthString(16)] = in.ConsumeBool() ? json(in.ConsumeRandomLengthString(16)) : any_value(in, 1);
  json metadata = json::object();
  field(in, metadata, "name", in.ConsumeRandomLengthString(16));
  field(in, metadata, "uid", in.ConsumeRandomLengthString(8));
  field(in, metadata, "resourceVersion", std::to_string(in.ConsumeIntegral<uint32_t>()));
  field(in, metadata, "labels", json{{"nfd.node.kubernetes.io/node-name", "node-1"}});
  field(in, metadata, "ownerReferences", json::array({owner(in), owner(in)}));
  json features = json::object();
  field(in, features, "attributes", json{{"x", {{"elements", {{"a", "b"}}}}}});
  field(in, features, "flags", json::object());
  json spec = json::object();
  field(in, spec, "labels", labels);
  field(in, spec, "features", features);
  json doc = json::object();
  field(in, doc, "kind", in.ConsumeBool() ? "NodeFeature" : "Pod");
  field(in, doc, "metadata", metadata);
  field(in, doc, "spec", spec);
  return doc.dump(-1, ' ', false, json::error_handler_t::replace);
}

// Printable ASCII (JSON text must be UTF-8; labels kgpu writes always are).
std::string printable(std::string s) {
  for (char& c : s) c = static_cast<char>(0x20 + static_cast<unsigned char>(c) % 0x5f);
  return s;
}

// What kgpu writes parses back to what it was written with.
void round_trip(FuzzedDataProvider& in) {
  std::map<std::string, std::string> labels;
  for (int n = in.ConsumeIntegralInRange<int>(0, 4); n > 0; --n)
    labels[printable(in.ConsumeRandomLengthString(16))] = printable(in.ConsumeRandomLengthString(16));
  auto state = kgpu::kube::parse_node_feature(kgpu::kube::node_feature_object(kPlace, labels, kOwners).dump());
  if (!state || !kgpu::kube::node_feature_matches(*state, kPlace, labels, kOwners)) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  read(std::string_view(reinterpret_cast<const char*>(data), size));
  FuzzedDataProvider in(data, size);
  read(typed(in));
  round_trip(in);
  return 0;
}
