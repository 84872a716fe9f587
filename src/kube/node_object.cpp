#include "kube/node_object.h"

#include <nlohmann/json.hpp>

namespace kgpu::kube {
namespace {

Result<NodeSnapshot> node_from(const nlohmann::json& object) {
  if (!object.is_object() || object.value("kind", "") != "Node")
    return Error::invalid("not a v1 Node object (kind is \"" + (object.is_object() ? object.value("kind", "") : "") +
                          "\")");
  NodeSnapshot node;
  const auto& meta = object.contains("metadata") ? object["metadata"] : nlohmann::json::object();
  if (meta.is_object()) {
    node.resource_version = meta.value("resourceVersion", "");
    if (meta.contains("labels") && meta["labels"].is_object())
      for (const auto& [key, value] : meta["labels"].items())
        if (value.is_string()) node.labels[key] = value.get<std::string>();
  }
  return node;
}

}  // namespace

Result<NodeSnapshot> parse_node(std::string_view json) {
  auto doc = nlohmann::json::parse(json, nullptr, false);
  if (doc.is_discarded()) return Error::invalid("the API server's Node answer is not JSON");
  return node_from(doc);
}

Result<WatchEvent> parse_watch_event(std::string_view line) {
  auto doc = nlohmann::json::parse(line, nullptr, false);
  if (doc.is_discarded() || !doc.is_object() || !doc.contains("type") || !doc["type"].is_string())
    return Error::invalid("malformed watch event: " + std::string(line.substr(0, 200)));
  WatchEvent event;
  event.type = doc["type"].get<std::string>();
  const auto& object = doc.contains("object") ? doc["object"] : nlohmann::json::object();
  if (event.type == "ERROR") {
    event.error_code = object.is_object() ? object.value("code", 0) : 0;
    return event;
  }
  if (event.type == "BOOKMARK") {
    if (object.is_object() && object.contains("metadata") && object["metadata"].is_object())
      event.node.resource_version = object["metadata"].value("resourceVersion", "");
    return event;
  }
  auto node = node_from(object);
  if (!node) return node.error();
  event.node = std::move(*node);
  return event;
}

}  // namespace kgpu::kube
