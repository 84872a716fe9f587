#pragma once
// Reading API-server answers, which are outside input: every accessor checks the type first
// (nlohmann's get() throws on a field of the wrong type, and no answer may take a thread down).
#include <nlohmann/json.hpp>

namespace kgpu::kube {

// The member `key` of `object`; null when `object` is not an object or the member is absent or null
// (the API server writes null for an unset optional field).
inline const nlohmann::json* json_member(const nlohmann::json& object, const char* key) {
  if (!object.is_object()) return nullptr;
  auto it = object.find(key);
  return it == object.end() || it->is_null() ? nullptr : &*it;
}

}  // namespace kgpu::kube
