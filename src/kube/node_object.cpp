#include "kube/node_object.h"

#include <limits>

#include <nlohmann/json.hpp>

#include "core/json_depth.h"

namespace kgpu::kube {
namespace {

using nlohmann::json;

// Every accessor checks the type first: nlohmann's value()/get() throw on a field of the wrong
// type, and an API server answer is outside input (it must never take the watcher thread down).

// The member `key` of `object` when it is present; null when absent.
const json* member(const json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

// An optional string field: "" when absent or null, an error when it has another type.
Result<std::string> optional_string(const json& object, const char* key, const std::string& where) {
  const json* v = member(object, key);
  if (v == nullptr || v->is_null()) return std::string();
  if (!v->is_string()) return Error::invalid(where + "." + key + " is a " + v->type_name() + ", not a string");
  return v->get<std::string>();
}

Result<NodeSnapshot> node_from(const json& object) {
  if (!object.is_object()) return Error::invalid(std::string("not a v1 Node object (a JSON ") + object.type_name() + ")");
  auto kind = optional_string(object, "kind", "object");
  if (!kind) return kind.error();
  if (*kind != "Node") return Error::invalid("not a v1 Node object (kind is \"" + *kind + "\")");
  NodeSnapshot node;
  const json* meta = member(object, "metadata");
  if (meta == nullptr || meta->is_null()) return node;
  if (!meta->is_object()) return Error::invalid(std::string("Node metadata is a ") + meta->type_name() + ", not an object");
  auto version = optional_string(*meta, "resourceVersion", "metadata");
  if (!version) return version.error();
  node.resource_version = std::move(*version);
  auto uid = optional_string(*meta, "uid", "metadata");
  if (!uid) return uid.error();
  node.uid = std::move(*uid);
  const json* labels = member(*meta, "labels");
  if (labels == nullptr || labels->is_null()) return node;
  if (!labels->is_object())
    return Error::invalid(std::string("Node metadata.labels is a ") + labels->type_name() + ", not an object");
  for (const auto& [key, value] : labels->items()) {
    // Label values are strings in every Kubernetes version: anything else is a broken answer, and
    // dropping that one label could silently switch the node to another config.
    if (!value.is_string())
      return Error::invalid("Node label \"" + key + "\" has a " + value.type_name() + " value, not a string");
    node.labels[key] = value.get<std::string>();
  }
  return node;
}

// A watch ERROR event's Status code; 0 when the object carries none.
Result<int> status_code(const json& object) {
  const json* code = member(object, "code");
  if (code == nullptr || code->is_null()) return 0;
  if (!code->is_number_integer()) return Error::invalid(std::string("watch ERROR code is a ") + code->type_name() + ", not an integer");
  auto wide = code->get<int64_t>();
  if (wide < 0 || wide > std::numeric_limits<int>::max())
    return Error::invalid("watch ERROR code " + std::to_string(wide) + " is out of range");
  return static_cast<int>(wide);
}

// The start of a bad answer for an error message: control bytes and non-ASCII are replaced, so a
// hostile answer cannot forge log lines or carry invalid UTF-8 into them.
std::string excerpt(std::string_view text) {
  constexpr size_t kMax = 200;
  std::string out(text.substr(0, kMax));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return text.size() <= kMax ? out : out + "...";
}

}  // namespace

Result<NodeSnapshot> parse_node(std::string_view text) {
  if (auto deep = check_json_depth(text, "the API server's Node answer"); !deep) return deep.error();
  auto doc = json::parse(text, nullptr, false);
  if (doc.is_discarded()) return Error::invalid("the API server's Node answer is not JSON: " + excerpt(text));
  return node_from(doc);
}

Result<WatchEvent> parse_watch_event(std::string_view line) {
  if (auto deep = check_json_depth(line, "a Node watch event"); !deep) return deep.error();
  auto doc = json::parse(line, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return Error::invalid("malformed watch event: " + excerpt(line));
  auto type = optional_string(doc, "type", "watch event");
  if (!type) return Error::invalid(type.error().message + ": " + excerpt(line));
  if (type->empty()) return Error::invalid("watch event without a type: " + excerpt(line));
  WatchEvent event;
  event.type = std::move(*type);
  static const json kEmpty = json::object();
  const json* found = member(doc, "object");
  const json& object = found != nullptr ? *found : kEmpty;
  if (event.type == "ERROR") {
    auto code = status_code(object);
    if (!code) return code.error();
    event.error_code = *code;
    return event;
  }
  if (event.type == "BOOKMARK") {
    auto version = optional_string(member(object, "metadata") ? *member(object, "metadata") : kEmpty,
                                   "resourceVersion", "bookmark metadata");
    if (!version) return version.error();
    event.node.resource_version = std::move(*version);
    return event;
  }
  auto node = node_from(object);
  if (!node) return node.error();
  event.node = std::move(*node);
  return event;
}

}  // namespace kgpu::kube
