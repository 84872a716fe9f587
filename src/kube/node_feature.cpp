#include "kube/node_feature.h"

#include "core/json_depth.h"
#include "kube/json_member.h"
#include "kube/node_capacity.h"

namespace kgpu::kube {
namespace {

using nlohmann::json;

// Every accessor checks the type first (kube/json_member.h).
const json* member(const json& object, const char* key) { return json_member(object, key); }

Result<std::string> string_at(const json& object, const char* key, const std::string& where) {
  const json* v = member(object, key);
  if (v == nullptr) return std::string();
  if (!v->is_string()) return Error::invalid(where + "." + key + " is a " + v->type_name() + ", not a string");
  return v->get<std::string>();
}

Result<const json*> object_at(const json& object, const char* key, const std::string& where) {
  const json* v = member(object, key);
  if (v != nullptr && !v->is_object())
    return Error::invalid(where + "." + key + " is a " + v->type_name() + ", not an object");
  return v;
}

Result<std::map<std::string, std::string>> string_map(const json* object, const std::string& where) {
  std::map<std::string, std::string> out;
  if (object == nullptr) return out;
  for (const auto& [key, value] : object->items()) {
    if (!value.is_string())
      return Error::invalid(where + "[\"" + key + "\"] is a " + value.type_name() + ", not a string");
    out[key] = value.get<std::string>();
  }
  return out;
}

// A JSON document from the API server: bounded nesting, parsed without exceptions.
Result<json> parse_document(std::string_view text, const std::string& what) {
  if (auto deep = check_json_depth(text, what); !deep) return deep.error();
  auto doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return Error::invalid(what + " is not JSON");
  if (!doc.is_object()) return Error::invalid(what + " is a JSON " + std::string(doc.type_name()) + ", not an object");
  return doc;
}

Result<std::vector<OwnerRef>> owner_refs(const json& metadata) {
  std::vector<OwnerRef> out;
  const json* refs = member(metadata, "ownerReferences");
  if (refs == nullptr) return out;
  if (!refs->is_array()) return Error::invalid(std::string("metadata.ownerReferences is a ") + refs->type_name());
  for (const auto& ref : *refs) {
    if (!ref.is_object()) return Error::invalid("an ownerReference is not an object");
    OwnerRef owner;
    for (auto [field, key] : {std::pair{&owner.api_version, "apiVersion"}, std::pair{&owner.kind, "kind"},
                              std::pair{&owner.name, "name"}, std::pair{&owner.uid, "uid"}}) {
      auto value = string_at(ref, key, "ownerReference");
      if (!value) return value.error();
      *field = std::move(*value);
    }
    if (const json* controller = member(ref, "controller")) {
      if (!controller->is_boolean()) return Error::invalid("ownerReference.controller is not a boolean");
      owner.controller = controller->get<bool>();
    }
    out.push_back(std::move(owner));
  }
  return out;
}

json owners_json(const std::vector<OwnerRef>& owners) {
  json out = json::array();
  for (const auto& o : owners) {
    json ref{{"apiVersion", o.api_version}, {"kind", o.kind}, {"name", o.name}, {"uid", o.uid}};
    if (o.controller) ref["controller"] = true;
    out.push_back(std::move(ref));
  }
  return out;
}

// spec as GFD writes it: every feature set empty, the labels.
json spec_json(const std::map<std::string, std::string>& labels) {
  return {{"features", {{"flags", json::object()}, {"attributes", json::object()}, {"instances", json::object()}}},
          {"labels", labels}};
}

bool dns_label(std::string_view s) {
  if (s.empty() || s.size() > 63 || s.front() == '-' || s.back() == '-') return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

}  // namespace

std::string NodeFeaturePlace::collection_path() const {
  return "/apis/" + std::string(kNodeFeatureApiVersion) + "/namespaces/" + ns + "/nodefeatures";
}

std::string NodeFeaturePlace::path() const { return collection_path() + "/" + name(); }

Status check_node_feature_place(const NodeFeaturePlace& place) {
  if (!dns_label(place.ns))
    return Error::invalid("namespace \"" + place.ns +
                          "\" is not a Kubernetes namespace name (lower-case letters, digits and '-', at most 63)");
  if (auto node = check_node_name(place.node); !node) return node.error();
  if (auto name = check_node_name(place.name()); !name)
    return Error::invalid("the NodeFeature name \"" + place.name() + "\" is not valid (" + name.error().message + ")");
  return ok_status();
}

json node_feature_object(const NodeFeaturePlace& place, const std::map<std::string, std::string>& labels,
                         const std::vector<OwnerRef>& owners) {
  json metadata{{"name", place.name()}, {"namespace", place.ns}, {"labels", {{kNodeFeatureNodeLabel, place.node}}}};
  if (!owners.empty()) metadata["ownerReferences"] = owners_json(owners);
  return {{"apiVersion", kNodeFeatureApiVersion}, {"kind", kNodeFeatureKind}, {"metadata", metadata},
          {"spec", spec_json(labels)}};
}

Result<NodeFeatureState> parse_node_feature(std::string_view text) {
  auto doc = parse_document(text, "the API server's NodeFeature answer");
  if (!doc) return doc.error();
  auto kind = string_at(*doc, "kind", "NodeFeature");
  if (!kind) return kind.error();
  if (*kind != kNodeFeatureKind) return Error::invalid("not a NodeFeature (kind \"" + *kind + "\")");
  NodeFeatureState state;
  auto metadata = object_at(*doc, "metadata", "NodeFeature");
  if (!metadata) return metadata.error();
  static const json kEmpty = json::object();
  const json& meta = *metadata ? **metadata : kEmpty;
  auto version = string_at(meta, "resourceVersion", "metadata");
  if (!version) return version.error();
  state.resource_version = std::move(*version);
  auto meta_labels = object_at(meta, "labels", "metadata");
  if (!meta_labels) return meta_labels.error();
  auto object_labels = string_map(*meta_labels, "metadata.labels");
  if (!object_labels) return object_labels.error();
  if (auto it = object_labels->find(kNodeFeatureNodeLabel); it != object_labels->end()) state.node_label = it->second;
  auto owners = owner_refs(meta);
  if (!owners) return owners.error();
  state.owners = std::move(*owners);
  auto spec = object_at(*doc, "spec", "NodeFeature");
  if (!spec) return spec.error();
  const json& spec_object = *spec ? **spec : kEmpty;
  auto labels = object_at(spec_object, "labels", "spec");
  if (!labels) return labels.error();
  auto spec_labels = string_map(*labels, "spec.labels");
  if (!spec_labels) return spec_labels.error();
  state.labels = std::move(*spec_labels);
  auto features = object_at(spec_object, "features", "spec");
  if (!features) return features.error();
  if (*features)
    for (const auto& [set, members] : (*features)->items())
      if (!members.is_null() && !(members.is_object() && members.empty())) state.features_empty = false;
  state.object = std::move(*doc);
  return state;
}

bool node_feature_matches(const NodeFeatureState& state, const NodeFeaturePlace& place,
                          const std::map<std::string, std::string>& labels, const std::vector<OwnerRef>& owners) {
  return state.node_label == place.node && state.labels == labels && state.owners == owners && state.features_empty;
}

json node_feature_update(const NodeFeatureState& state, const NodeFeaturePlace& place,
                         const std::map<std::string, std::string>& labels, const std::vector<OwnerRef>& owners) {
  json object = state.object.is_object() ? state.object : json::object();
  object["apiVersion"] = kNodeFeatureApiVersion;
  object["kind"] = kNodeFeatureKind;
  json& metadata = object["metadata"];
  if (!metadata.is_object()) metadata = json::object();
  metadata["name"] = place.name();
  metadata["namespace"] = place.ns;
  if (!metadata["labels"].is_object()) metadata["labels"] = json::object();
  metadata["labels"][kNodeFeatureNodeLabel] = place.node;
  if (owners.empty())
    metadata.erase("ownerReferences");
  else
    metadata["ownerReferences"] = owners_json(owners);
  metadata["resourceVersion"] = state.resource_version;
  object["spec"] = spec_json(labels);
  return object;
}

Result<std::vector<OwnerRef>> owners_from_pod(std::string_view text) {
  auto doc = parse_document(text, "the API server's Pod answer");
  if (!doc) return doc.error();
  auto kind = string_at(*doc, "kind", "Pod");
  if (!kind) return kind.error();
  if (*kind != "Pod") return Error::invalid("not a Pod (kind \"" + *kind + "\")");
  auto metadata = object_at(*doc, "metadata", "Pod");
  if (!metadata) return metadata.error();
  if (*metadata == nullptr) return Error::invalid("the Pod has no metadata");
  auto name = string_at(**metadata, "name", "metadata");
  if (!name) return name.error();
  auto uid = string_at(**metadata, "uid", "metadata");
  if (!uid) return uid.error();
  if (name->empty() || uid->empty()) return Error::invalid("the Pod answer has no metadata.name or metadata.uid");
  auto owners = owner_refs(**metadata);
  if (!owners) return owners.error();
  std::vector<OwnerRef> out;
  for (const auto& owner : *owners)
    if (owner.kind == "DaemonSet" && !owner.api_version.empty() && !owner.uid.empty() && !owner.name.empty()) {
      out.push_back(owner);
      out.back().controller = true;
      break;
    }
  out.push_back({"v1", "Pod", *name, *uid, false});
  return out;
}

}  // namespace kgpu::kube
