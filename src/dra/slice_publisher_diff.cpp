#include "dra/slice_publisher_diff.h"

#include <algorithm>
#include <map>

namespace kgpu::dra {
namespace {

using nlohmann::json;

// The API server leaves out empty and null fields (Go's omitempty) and may add null ones; content is
// compared without them.
void drop_empty(json& value) {
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end();) {
      drop_empty(*it);
      const bool empty = it->is_null() || ((it->is_object() || it->is_array()) && it->empty());
      it = empty ? value.erase(it) : std::next(it);
    }
  } else if (value.is_array()) {
    for (auto& element : value) drop_empty(element);
  }
}

// A listed slice as resource_slices() would have built it at generation 0: only what kgpu writes.
json comparable(const kube::ListedSlice& listed, SliceApi api) {
  json metadata{{"name", listed.name}};
  if (!listed.owner_references.is_null()) metadata["ownerReferences"] = listed.owner_references;
  json spec = listed.spec;
  spec["pool"]["generation"] = 0;
  json object{{"apiVersion", api_version(api)}, {"kind", "ResourceSlice"}, {"metadata", metadata}, {"spec", spec}};
  drop_empty(object);
  return object;
}

bool unchanged(const DriverPool& desired, const std::vector<kube::ListedSlice>& listed, const SliceOptions& options,
               SliceApi api) {
  auto wanted = resource_slices(desired, options, 0, api);
  if (listed.size() != wanted.size()) return false;
  std::map<std::string, const kube::ListedSlice*> by_name;
  for (const auto& l : listed) by_name[l.name] = &l;
  const int64_t generation = listed.front().generation;
  for (auto& w : wanted) {
    auto it = by_name.find(w["metadata"]["name"].get<std::string>());
    if (it == by_name.end() || it->second->generation != generation) return false;
    drop_empty(w);
    if (comparable(*it->second, api) != w) return false;
  }
  return true;
}

}  // namespace

std::string slice_name(const SliceOptions& options, const std::string& driver, size_t index) {
  return options.node_name + "-" + driver + "-" + std::to_string(index);
}

std::string with_resource_version(const std::string& text, const std::string& resource_version) {
  // resource_slice_texts() opens with apiVersion and kind (fixed words), then "metadata":{ ...: the
  // first occurrence is the metadata object.
  static const std::string kMetadata = "\"metadata\":{";
  const size_t at = text.find(kMetadata);
  if (at == std::string::npos) return text;
  json rv = resource_version;  // escaped as JSON
  return text.substr(0, at + kMetadata.size()) + "\"resourceVersion\":" + rv.dump() + "," +
         text.substr(at + kMetadata.size());
}

SliceDiff diff_slices(const DriverPool* desired, const std::vector<kube::ListedSlice>& listed,
                      const SliceOptions& options, SliceApi api, int64_t min_generation) {
  SliceDiff diff;
  int64_t highest = min_generation;
  for (const auto& l : listed) highest = std::max(highest, l.generation);
  diff.generation = highest;

  if (desired == nullptr) {
    for (const auto& l : listed) diff.writes.push_back({SliceWrite::Kind::Delete, l.name, l.resource_version, ""});
    return diff;
  }
  if (!listed.empty() && unchanged(*desired, listed, options, api)) {
    diff.generation = listed.front().generation;
    return diff;
  }

  diff.generation = highest + 1;
  auto texts = resource_slice_texts(*desired, options, diff.generation, api);
  std::map<std::string, const kube::ListedSlice*> by_name;
  for (const auto& l : listed) by_name[l.name] = &l;
  std::vector<SliceWrite> frees, writes;
  std::map<std::string, bool> wanted;
  for (size_t k = 0; k < texts.size(); ++k) {
    const std::string name = slice_name(options, desired->driver, k);
    wanted[name] = true;
    auto it = by_name.find(name);
    // driver, nodeName and pool.name are immutable: a listed slice that differs there is replaced.
    const bool replace = it != by_name.end() && (it->second->pool_name != desired->pool ||
                                                 it->second->node_name != options.node_name ||
                                                 it->second->driver != desired->driver);
    if (replace) frees.push_back({SliceWrite::Kind::Delete, name, it->second->resource_version, ""});
    if (it == by_name.end() || replace)
      writes.push_back({SliceWrite::Kind::Create, name, "", std::move(texts[k])});
    else
      writes.push_back({SliceWrite::Kind::Update, name, it->second->resource_version,
                        with_resource_version(texts[k], it->second->resource_version)});
  }
  diff.writes = std::move(frees);
  for (auto& w : writes) diff.writes.push_back(std::move(w));
  for (const auto& l : listed)
    if (!wanted.count(l.name)) diff.writes.push_back({SliceWrite::Kind::Delete, l.name, l.resource_version, ""});
  return diff;
}

}  // namespace kgpu::dra
