#include "dra/health/device_metadata.h"

#include <algorithm>
#include <map>
#include <variant>

#include <nlohmann/json.hpp>

#include "dra/model/device_names.h"
#include "mps/claim_request.h"
#include "plan/mps_paths.h"

namespace kgpu::dra::health {

namespace {

using json = nlohmann::ordered_json;

// Names that become path parts: lower-case letters, digits, '-' and '.', starting with a letter or
// digit (DNS subdomains, as the API validates namespaces and claim names), so never "..", "/" or "".
bool safe_path_part(const std::string& s) {
  if (s.empty() || s.size() > 253 || s.front() == '.' || s.front() == '-') return false;
  return std::all_of(s.begin(), s.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'; });
}

json attribute_json(const AttributeValue& v) {
  if (const auto* s = std::get_if<std::string>(&v)) return {{"string", *s}};
  if (const auto* i = std::get_if<int64_t>(&v)) return {{"int", *i}};
  if (const auto* b = std::get_if<bool>(&v)) return {{"bool", *b}};
  return {{"version", std::get<VersionString>(v).value}};
}

const DraDevice* find_device(const DriverPool& pool, const std::string& name) {
  for (const auto& d : pool.devices)
    if (d.name == name) return &d;
  return nullptr;
}

const MigDevice* find_mig(const Inventory& inventory, const std::string& uuid) {
  for (const auto& g : inventory.gpus)
    for (const auto& m : g.mig_devices)
      if (m.uuid == uuid) return &m;
  return nullptr;
}

// The device's attributes as a ResourceSlice holds them, plus the node's own facts (kgpu's names,
// in the driver's domain like the published ones).
json device_json(const std::string& driver, const PreparedDevice& prepared, const PreparedClaim& claim,
                 const DriverPool& pool, const Inventory& inventory) {
  json d = {{"driver", driver}, {"pool", prepared.pool}, {"name", prepared.device}};
  const DraDevice* published = find_device(pool, prepared.device);
  json attributes = json::object();
  std::string uuid;
  if (published) {
    for (const Attributes* list : {published->gpu_attributes.get(), &published->attributes}) {
      if (!list) continue;
      for (const auto& a : *list) attributes[std::string(a.name)] = attribute_json(a.value);
    }
    if (const auto* v = published->attribute("uuid"); v && std::holds_alternative<std::string>(*v))
      uuid = std::get<std::string>(*v);
    if (const auto* memory = published->capacity_of("memory")) attributes["memoryBytes"] = {{"int", *memory}};
  }
  if (const MigDevice* mig = uuid.empty() ? nullptr : find_mig(inventory, uuid); mig && mig->placement_start >= 0) {
    attributes["placementStart"] = {{"int", mig->placement_start}};
    attributes["placementSize"] = {{"int", mig->placement_size}};
  }
  for (const auto& share : claim.shares)
    if (share.device == prepared.device) {
      attributes["memoryShareBytes"] = {{"int", share.memory_bytes}};
      attributes["mpsPipeDirectory"] = {
          {"string", mps_container_pipe_dir(mps_claim_resource(share_daemon_name(share.gpu_uuid)))}};
    }
  if (claim.mps)
    attributes["mpsPipeDirectory"] = {{"string", mps_container_pipe_dir(mps_claim_resource(claim.ref.uid))}};
  if (!attributes.empty()) d["attributes"] = std::move(attributes);
  return d;
}

std::string path_join(const std::string& a, const std::string& b) {
  return a.empty() || a.back() == '/' ? a + b : a + "/" + b;
}

}  // namespace

std::string claim_metadata_dir(const MetadataLayout& layout, const std::string& ns, const std::string& name) {
  return path_join(path_join(layout.plugin_data_dir, "dra-device-metadata"), ns + "_" + name);
}

std::string metadata_cdi_prefix(const MetadataLayout& layout, const std::string& claim_uid) {
  return layout.driver + "_metadata_" + claim_uid + "_";
}

std::string metadata_container_path(const std::string& driver, const std::string& claim_name,
                                    const std::optional<std::string>& pod_claim_name, const std::string& request) {
  const bool templated = pod_claim_name && !pod_claim_name->empty();
  return std::string(kMetadataContainerDir) + (templated ? "/resourceclaimtemplates/" : "/resourceclaims/") +
         (templated ? *pod_claim_name : claim_name) + "/" + request + "/" + driver + "-metadata.json";
}

std::vector<MetadataFile> claim_metadata(const MetadataLayout& layout, const PreparedClaim& claim,
                                         const std::optional<std::string>& pod_claim_name, const DriverPool& pool,
                                         const Inventory& inventory) {
  const ClaimRef& ref = claim.ref;
  if (!safe_path_part(ref.ns) || !safe_path_part(ref.name) || !is_safe_claim_uid(ref.uid)) return {};
  const std::optional<std::string> pod_name =
      pod_claim_name && is_dns_label(*pod_claim_name) ? pod_claim_name : std::nullopt;
  std::map<std::string, std::vector<const PreparedDevice*>> by_request;
  for (const auto& d : claim.devices)
    for (const auto& r : d.requests) by_request[r].push_back(&d);
  std::vector<MetadataFile> out;
  for (const auto& [request, devices] : by_request) {
    if (!is_dns_label(request)) continue;
    json devices_json = json::array();
    for (const auto* d : devices) devices_json.push_back(device_json(layout.driver, *d, claim, pool, inventory));
    json doc = {{"kind", "DeviceMetadata"},
                {"apiVersion", std::string(kMetadataApiVersion)},
                {"metadata", {{"name", ref.name}, {"namespace", ref.ns}, {"uid", ref.uid}, {"generation", 1}}}};
    if (pod_name) doc["podClaimName"] = *pod_name;
    doc["requests"] = json::array({{{"name", request}, {"devices", std::move(devices_json)}}});

    MetadataFile f;
    f.request = request;
    f.metadata_path = path_join(path_join(claim_metadata_dir(layout, ref.ns, ref.name), request), "metadata.json");
    // A stream of one object per API version (one version today). Invalid UTF-8 (a driver's product
    // name) is replaced, never thrown: this runs on a claim thread.
    f.metadata_text = doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
    const std::string cdi_name = ref.uid + "_" + request;
    json spec = {{"cdiVersion", "0.5.0"},
                 {"kind", layout.driver + "/metadata"},
                 {"devices",
                  json::array({{{"name", cdi_name},
                                {"containerEdits",
                                 {{"mounts",
                                   json::array({{{"hostPath", f.metadata_path},
                                                 {"containerPath", metadata_container_path(layout.driver, ref.name,
                                                                                           pod_name, request)},
                                                 {"options", {"ro", "bind"}}}})}}}}})}};
    f.cdi_path = path_join(layout.cdi_dir, metadata_cdi_prefix(layout, ref.uid) + request + ".json");
    f.cdi_text = spec.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
    f.cdi_device_id = layout.driver + "/metadata=" + cdi_name;
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<PreparedDevice> with_metadata_devices(std::vector<PreparedDevice> devices,
                                                  const std::vector<MetadataFile>& files) {
  for (const auto& f : files)
    for (auto& d : devices)
      if (std::find(d.requests.begin(), d.requests.end(), f.request) != d.requests.end()) {
        if (std::find(d.cdi_device_ids.begin(), d.cdi_device_ids.end(), f.cdi_device_id) == d.cdi_device_ids.end())
          d.cdi_device_ids.push_back(f.cdi_device_id);
        break;
      }
  return devices;
}

}  // namespace kgpu::dra::health
