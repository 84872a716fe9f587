#include "dra/publish/slice_objects.h"
#include "dra/publish/slice_publisher_diff.h"

#include <algorithm>
#include <map>

namespace kgpu::dra {
namespace {

using nlohmann::json;

void drop_nulls(json& value) {
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end();) {
      if (it->is_null()) {
        it = value.erase(it);
      } else {
        drop_nulls(*it);
        ++it;
      }
    }
  } else if (value.is_array()) {
    for (auto& element : value) drop_nulls(element);
  }
}

// Puts a listed spec into the form the builder writes: the API server leaves out empty lists and
// maps (Go's omitempty) and may send null fields, where the builder always writes "devices",
// "attributes" and "capacity" and never null; it adds taints' timeAdded.
void builder_form(json& spec, SliceApi api) {
  drop_nulls(spec);
  if (!spec.contains("devices")) spec["devices"] = json::array();
  if (!spec["devices"].is_array()) return;  // then it differs anyway
  for (auto& device : spec["devices"]) {
    if (!device.is_object()) continue;
    json* fields = &device;
    if (api == SliceApi::V1beta1) {
      if (!device.contains("basic")) device["basic"] = json::object();
      fields = &device["basic"];
      if (!fields->is_object()) continue;
    }
    if (!fields->contains("attributes")) (*fields)["attributes"] = json::object();
    if (!fields->contains("capacity")) (*fields)["capacity"] = json::object();
    // The API server stamps each taint with the time it saw it; kgpu never writes that.
    if (auto taints = fields->find("taints"); taints != fields->end() && taints->is_array())
      for (auto& taint : *taints)
        if (taint.is_object()) taint.erase("timeAdded");
  }
}

// A listed slice as resource_slice_texts() writes it (at the listed generation): only what kgpu
// writes, in the same key order (nlohmann's dump() sorts keys as the texts do), so equal content is
// equal text. Comparing text avoids building the desired slices as JSON trees (40x slower).
std::string comparable_text(kube::ListedSlice& listed, SliceApi api) {
  json metadata{{"name", listed.name}};
  if (!listed.owner_references.is_null()) metadata["ownerReferences"] = listed.owner_references;
  builder_form(listed.spec, api);
  std::string out = "{\"apiVersion\":";
  out += json(api_version(api)).dump();
  out += ",\"kind\":\"ResourceSlice\",\"metadata\":";
  out += metadata.dump();
  out += ",\"spec\":";
  out += listed.spec.dump();
  out += '}';
  return out;
}

bool unchanged(const DriverPool& desired, std::vector<kube::ListedSlice>& listed, const SliceOptions& options,
               SliceApi api) {
  const int64_t generation = listed.front().generation;
  auto wanted = resource_slice_texts(desired, options, generation, api);
  if (listed.size() != wanted.size()) return false;
  std::map<std::string, kube::ListedSlice*> by_name;
  for (auto& l : listed) by_name[l.name] = &l;
  for (size_t k = 0; k < wanted.size(); ++k) {
    auto it = by_name.find(slice_name(options, desired.driver, k));
    if (it == by_name.end() || it->second->generation != generation) return false;
    if (comparable_text(*it->second, api) != wanted[k]) return false;
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

SliceDiff diff_slices(const DriverPool* desired, std::vector<kube::ListedSlice> listed, const SliceOptions& options,
                      SliceApi api, int64_t min_generation) {
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

  // A listed generation past the ceiling was planted (no writer gets there one write at a time):
  // highest + 1 could overflow, and the API server would refuse it forever. Restart the pool
  // instead: every listed slice is deleted first, then the desired ones created just above what
  // this process wrote before.
  const bool restart = highest >= kMaxPoolGeneration;
  diff.generation = restart ? (min_generation >= 0 && min_generation < kMaxPoolGeneration ? min_generation : 0) + 1
                            : highest + 1;
  if (restart)
    for (const auto& l : listed) diff.writes.push_back({SliceWrite::Kind::Delete, l.name, l.resource_version, ""});
  auto texts = resource_slice_texts(*desired, options, diff.generation, api);
  std::map<std::string, const kube::ListedSlice*> by_name;
  if (!restart)
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
  for (auto& w : frees) diff.writes.push_back(std::move(w));
  for (auto& w : writes) diff.writes.push_back(std::move(w));
  if (!restart)
    for (const auto& l : listed)
      if (!wanted.count(l.name)) diff.writes.push_back({SliceWrite::Kind::Delete, l.name, l.resource_version, ""});
  return diff;
}

}  // namespace kgpu::dra
