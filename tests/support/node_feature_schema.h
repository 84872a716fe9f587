#pragma once
// What node-feature-discovery's CRD (nodefeatures.nfd.k8s-sigs.io, version v1alpha1, from NFD's
// deployment/base/nfd-crds/nfd-api-crds.yaml) and its master require of a NodeFeature object,
// written down as our own check: the structural schema's fields and types (spec required;
// spec.features' attributes / flags / instances sets each with a required `elements` of the right
// shape; spec.labels a map of strings), the ObjectMeta essentials the API server checks (name,
// namespace, labels, ownerReferences), and what NFD's master needs to use the object (the
// nfd.node.kubernetes.io/node-name label, label names and values it accepts). A field the schema
// does not know would be pruned silently by the API server: here it is a problem, so that tests
// notice data that would be lost. Returns "" when the object passes, else the first problem.
#include <string>

#include <nlohmann/json.hpp>

namespace kgpu::test {

namespace node_feature_schema_detail {

using nlohmann::json;

inline bool dns_label(const std::string& s, size_t max = 63) {
  if (s.empty() || s.size() > max || s.front() == '-' || s.back() == '-') return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return true;
}

inline bool dns_subdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    if (!dns_label(s.substr(start, dot == std::string::npos ? std::string::npos : dot - start))) return false;
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

// [A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?, at most 63; `empty_ok` for label values.
inline bool label_name_part(const std::string& s, bool empty_ok = false) {
  if (s.empty()) return empty_ok;
  if (s.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); };
  if (!alnum(s.front()) || !alnum(s.back())) return false;
  for (char c : s)
    if (!alnum(c) && c != '-' && c != '_' && c != '.') return false;
  return true;
}

inline bool label_key(const std::string& key) {
  const size_t slash = key.find('/');
  if (slash == std::string::npos) return label_name_part(key);
  return dns_subdomain(key.substr(0, slash)) && label_name_part(key.substr(slash + 1));
}

inline std::string only_keys(const json& object, std::initializer_list<const char*> known, const std::string& where) {
  for (const auto& [key, value] : object.items()) {
    bool found = false;
    for (const char* k : known) found = found || key == k;
    if (!found) return where + "." + key + " is not in the schema (the API server would prune it)";
  }
  return "";
}

inline std::string string_map(const json& v, const std::string& where) {
  if (!v.is_object()) return where + " must be an object";
  for (const auto& [key, value] : v.items())
    if (!value.is_string()) return where + "[\"" + key + "\"] must be a string";
  return "";
}

inline std::string feature_sets(const json& sets, const std::string& kind, const std::string& where) {
  if (!sets.is_object()) return where + " must be an object";
  for (const auto& [name, set] : sets.items()) {
    const std::string at = where + "[\"" + name + "\"]";
    if (!set.is_object()) return at + " must be an object";
    if (auto p = only_keys(set, {"elements"}, at); !p.empty()) return p;
    if (!set.contains("elements")) return at + ".elements is required";
    const json& elements = set["elements"];
    if (kind == "attributes") {
      if (auto p = string_map(elements, at + ".elements"); !p.empty()) return p;
    } else if (kind == "flags") {
      if (!elements.is_object()) return at + ".elements must be an object";
      for (const auto& [flag, nil] : elements.items())
        if (!nil.is_object()) return at + ".elements[\"" + flag + "\"] must be an object";
    } else {
      if (!elements.is_array()) return at + ".elements must be an array";
      for (const auto& instance : elements) {
        if (!instance.is_object() || !instance.contains("attributes")) return at + ".elements[] needs attributes";
        if (auto p = only_keys(instance, {"attributes"}, at + ".elements[]"); !p.empty()) return p;
        if (auto p = string_map(instance["attributes"], at + ".elements[].attributes"); !p.empty()) return p;
      }
    }
  }
  return "";
}

inline std::string metadata(const json& m) {
  if (!m.is_object()) return "metadata must be an object";
  if (!m.contains("name") || !m["name"].is_string() || !dns_subdomain(m["name"].get<std::string>()))
    return "metadata.name must be a DNS subdomain";
  if (m.contains("namespace") && (!m["namespace"].is_string() || !dns_label(m["namespace"].get<std::string>())))
    return "metadata.namespace must be a DNS label";
  if (m.contains("labels")) {
    if (auto p = string_map(m["labels"], "metadata.labels"); !p.empty()) return p;
    for (const auto& [key, value] : m["labels"].items())
      if (!label_key(key) || !label_name_part(value.get<std::string>(), true))
        return "metadata.labels has an invalid label " + key;
  }
  if (!m.contains("labels") || !m["labels"].contains("nfd.node.kubernetes.io/node-name") ||
      m["labels"]["nfd.node.kubernetes.io/node-name"] == "")
    return "metadata.labels needs nfd.node.kubernetes.io/node-name (NFD's master ignores objects without it)";
  if (m.contains("ownerReferences")) {
    if (!m["ownerReferences"].is_array()) return "metadata.ownerReferences must be an array";
    int controllers = 0;
    for (const auto& ref : m["ownerReferences"]) {
      if (!ref.is_object()) return "an ownerReference must be an object";
      for (const char* key : {"apiVersion", "kind", "name", "uid"})
        if (!ref.contains(key) || !ref[key].is_string() || ref[key] == "")
          return std::string("ownerReference.") + key + " is required (a non-empty string)";
      for (const char* key : {"controller", "blockOwnerDeletion"})
        if (ref.contains(key) && !ref[key].is_boolean()) return std::string("ownerReference.") + key + " must be a boolean";
      if (ref.value("controller", false)) ++controllers;
      if (auto p = only_keys(ref, {"apiVersion", "kind", "name", "uid", "controller", "blockOwnerDeletion"},
                             "ownerReference");
          !p.empty())
        return p;
    }
    if (controllers > 1) return "at most one ownerReference may be the controller";
  }
  return "";
}

}  // namespace node_feature_schema_detail

inline std::string node_feature_schema_problem(const nlohmann::json& object) {
  using namespace node_feature_schema_detail;
  if (!object.is_object()) return "a NodeFeature must be an object";
  if (auto p = only_keys(object, {"apiVersion", "kind", "metadata", "spec"}, "NodeFeature"); !p.empty()) return p;
  if (object.value("apiVersion", json()) != "nfd.k8s-sigs.io/v1alpha1") return "apiVersion must be nfd.k8s-sigs.io/v1alpha1";
  if (object.value("kind", json()) != "NodeFeature") return "kind must be NodeFeature";
  if (!object.contains("metadata")) return "metadata is required";
  if (auto p = metadata(object["metadata"]); !p.empty()) return p;
  if (!object.contains("spec")) return "spec is required";
  const json& spec = object["spec"];
  if (!spec.is_object()) return "spec must be an object";
  if (auto p = only_keys(spec, {"features", "labels"}, "spec"); !p.empty()) return p;
  if (spec.contains("labels") && !spec["labels"].is_null()) {
    if (auto p = string_map(spec["labels"], "spec.labels"); !p.empty()) return p;
    for (const auto& [key, value] : spec["labels"].items())
      if (!label_key(key) || !label_name_part(value.get<std::string>(), true))
        return "spec.labels[\"" + key + "\"] is not a valid node label (NFD's master drops it)";
  }
  if (spec.contains("features") && !spec["features"].is_null()) {
    const json& features = spec["features"];
    if (!features.is_object()) return "spec.features must be an object";
    if (auto p = only_keys(features, {"attributes", "flags", "instances"}, "spec.features"); !p.empty()) return p;
    for (const char* kind : {"attributes", "flags", "instances"})
      if (features.contains(kind) && !features[kind].is_null())
        if (auto p = feature_sets(features[kind], kind, std::string("spec.features.") + kind); !p.empty()) return p;
  }
  return "";
}

}  // namespace kgpu::test
