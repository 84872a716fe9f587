#include "kube/resource_slice_list.h"

#include <algorithm>

#include "core/json_depth.h"
#include "kube/json_member.h"

namespace kgpu::kube {
namespace {

using nlohmann::json;

// Every accessor checks the type first (kube/json_member.h).
const json* member(const json& object, const char* key) { return json_member(object, key); }

// The start of a bad answer for an error message, printable ASCII only.
std::string excerpt(std::string_view text) {
  constexpr size_t kMax = 200;
  std::string out(text.substr(0, kMax));
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = '?';
  return text.size() <= kMax ? out : out + "...";
}

Result<std::string> string_field(const json& object, const char* key, const std::string& where, bool required) {
  const json* v = member(object, key);
  if (v == nullptr) {
    if (required) return Error::invalid(where + "." + key + " is missing");
    return std::string();
  }
  if (!v->is_string()) return Error::invalid(where + "." + key + " is a " + v->type_name() + ", not a string");
  return v->get<std::string>();
}

Result<int64_t> int_field(const json& object, const char* key, const std::string& where) {
  const json* v = member(object, key);
  if (v == nullptr) return int64_t{0};
  if (!v->is_number_integer())
    return Error::invalid(where + "." + key + " is a " + v->type_name() + ", not an integer");
  if (v->is_number_unsigned() && v->get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    return Error::invalid(where + "." + key + " is out of range");
  return v->get<int64_t>();
}

Result<const json*> object_field(const json& object, const char* key, const std::string& where, bool required) {
  const json* v = member(object, key);
  if (v == nullptr) {
    if (required) return Error::invalid(where + "." + key + " is missing");
    return static_cast<const json*>(nullptr);
  }
  if (!v->is_object()) return Error::invalid(where + "." + key + " is a " + v->type_name() + ", not an object");
  return v;
}

Result<ListedSlice> slice_from(const json& item, const std::string& where) {
  if (!item.is_object()) return Error::invalid(where + " is a " + std::string(item.type_name()) + ", not an object");
  ListedSlice slice;
  auto meta = object_field(item, "metadata", where, true);
  if (!meta) return meta.error();
  auto name = string_field(**meta, "name", where + ".metadata", true);
  if (!name) return name.error();
  if (name->empty()) return Error::invalid(where + ".metadata.name is empty");
  slice.name = std::move(*name);
  auto version = string_field(**meta, "resourceVersion", where + ".metadata", false);
  if (!version) return version.error();
  slice.resource_version = std::move(*version);
  if (const json* owners = member(**meta, "ownerReferences")) {
    if (!owners->is_array()) return Error::invalid(where + ".metadata.ownerReferences is not an array");
    slice.owner_references = *owners;
  }
  auto spec = object_field(item, "spec", where, true);
  if (!spec) return spec.error();
  const std::string at = where + ".spec";
  auto driver = string_field(**spec, "driver", at, true);
  if (!driver) return driver.error();
  slice.driver = std::move(*driver);
  auto node = string_field(**spec, "nodeName", at, false);
  if (!node) return node.error();
  slice.node_name = std::move(*node);
  auto pool = object_field(**spec, "pool", at, true);
  if (!pool) return pool.error();
  auto pool_name = string_field(**pool, "name", at + ".pool", true);
  if (!pool_name) return pool_name.error();
  slice.pool_name = std::move(*pool_name);
  auto generation = int_field(**pool, "generation", at + ".pool");
  if (!generation) return generation.error();
  slice.generation = *generation;
  auto count = int_field(**pool, "resourceSliceCount", at + ".pool");
  if (!count) return count.error();
  slice.resource_slice_count = *count;
  slice.spec = **spec;
  return slice;
}

}  // namespace

Result<SliceList> parse_resource_slice_list(std::string_view text) {
  if (auto deep = check_json_depth(text, "the ResourceSlice list"); !deep) return deep.error();
  auto doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return Error::invalid("the ResourceSlice list is not a JSON object: " + excerpt(text));
  auto kind = string_field(doc, "kind", "list", false);
  if (!kind) return kind.error();
  if (!kind->empty() && *kind != "ResourceSliceList")
    return Error::invalid("not a ResourceSliceList (kind is \"" + excerpt(*kind) + "\")");
  SliceList list;
  auto meta = object_field(doc, "metadata", "list", false);
  if (!meta) return meta.error();
  if (*meta) {
    auto token = string_field(**meta, "continue", "list.metadata", false);
    if (!token) return token.error();
    list.continue_token = std::move(*token);
    auto version = string_field(**meta, "resourceVersion", "list.metadata", false);
    if (!version) return version.error();
    list.resource_version = std::move(*version);
  }
  const json* items = member(doc, "items");
  if (items == nullptr) return list;  // an empty list may leave items out
  if (!items->is_array())
    return Error::invalid(std::string("list.items is a ") + items->type_name() + ", not an array");
  list.items.reserve(items->size());
  for (size_t i = 0; i < items->size(); ++i) {
    auto slice = slice_from((*items)[i], "items[" + std::to_string(i) + "]");
    if (!slice) return Error::invalid("ResourceSlice list: " + slice.error().message);
    list.items.push_back(std::move(*slice));
  }
  return list;
}

Result<SliceWatchEvent> parse_slice_watch_event(std::string_view line) {
  if (auto deep = check_json_depth(line, "a ResourceSlice watch event"); !deep) return deep.error();
  auto doc = json::parse(line, nullptr, false);
  if (doc.is_discarded() || !doc.is_object()) return Error::invalid("malformed watch event: " + excerpt(line));
  auto type = string_field(doc, "type", "watch event", true);
  if (!type) return type.error();
  SliceWatchEvent event;
  event.type = std::move(*type);
  static const json kEmpty = json::object();
  auto object = object_field(doc, "object", "watch event", event.type != "BOOKMARK");
  if (!object) return object.error();
  const json& body = *object ? **object : kEmpty;
  if (event.type == "ERROR") {
    auto code = int_field(body, "code", "ERROR event object");
    if (!code) return code.error();
    event.error_code = static_cast<int>(std::clamp<int64_t>(*code, 0, 999));
    return event;
  }
  if (event.type == "BOOKMARK") {
    auto meta = object_field(body, "metadata", "bookmark", false);
    if (!meta) return meta.error();
    if (*meta) {
      auto version = string_field(**meta, "resourceVersion", "bookmark.metadata", false);
      if (!version) return version.error();
      event.resource_version = std::move(*version);
    }
    return event;
  }
  if (event.type != "ADDED" && event.type != "MODIFIED" && event.type != "DELETED")
    return Error::invalid("watch event of unknown type \"" + excerpt(event.type) + "\"");
  auto slice = slice_from(body, "object");
  if (!slice) return Error::invalid(event.type + " event: " + slice.error().message);
  if (slice->driver.empty()) return Error::invalid(event.type + " event: object.spec.driver is empty");
  event.resource_version = std::move(slice->resource_version);
  event.driver = std::move(slice->driver);
  event.node_name = std::move(slice->node_name);
  return event;
}

Result<std::vector<std::string>> parse_api_group_versions(std::string_view text) {
  if (auto deep = check_json_depth(text, "the API group discovery answer"); !deep) return deep.error();
  auto doc = json::parse(text, nullptr, false);
  if (doc.is_discarded() || !doc.is_object())
    return Error::invalid("the API group discovery answer is not a JSON object: " + excerpt(text));
  const json* versions = member(doc, "versions");
  if (versions == nullptr) return Error::invalid("the API group discovery answer lists no versions");
  if (!versions->is_array()) return Error::invalid("the API group discovery answer's versions is not an array");
  std::vector<std::string> out;
  for (size_t i = 0; i < versions->size(); ++i) {
    auto version = string_field((*versions)[i], "version", "versions[" + std::to_string(i) + "]", true);
    if (!version) return version.error();
    out.push_back(std::move(*version));
  }
  return out;
}

}  // namespace kgpu::kube
