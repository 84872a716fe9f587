#include "dra/claims/claim_checkpoint.h"

#include <cstdio>

#include <nlohmann/json.hpp>

#include "core/json_depth.h"

namespace kgpu::dra {

namespace {

using nlohmann::json;

constexpr const char* kKind = "KgpuPreparedClaims";
constexpr const char* kChecksumPrefix = "fnv1a64:";

std::string checksum(const std::string& text) {
  // FNV-1a, 64 bit: detects truncation and edits (not an attacker, who could write any file here).
  uint64_t hash = 14695981039346656037ull;
  for (unsigned char c : text) {
    hash ^= c;
    hash *= 1099511628211ull;
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return std::string(kChecksumPrefix) + hex;
}

json settings_json(const std::vector<TimeSliceSetting>& settings) {
  json out = json::array();
  for (const auto& t : settings) out.push_back({{"gpuUUID", t.gpu_uuid}, {"interval", to_string(t.interval)}});
  return out;
}

std::vector<TimeSliceSetting> settings_from_json(const json& list) {
  std::vector<TimeSliceSetting> out;
  for (const auto& t : list) {
    TimeSliceSetting s{t.at("gpuUUID").get<std::string>(), TimeSliceInterval::Default};
    const auto name = t.at("interval").get<std::string>();
    for (auto i : {TimeSliceInterval::Default, TimeSliceInterval::Short, TimeSliceInterval::Medium,
                   TimeSliceInterval::Long})
      if (name == to_string(i)) s.interval = i;
    out.push_back(std::move(s));
  }
  return out;
}

std::string compact(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

json to_json(const PreparedClaim& c) {
  json devices = json::array();
  for (const auto& d : c.devices) {
    json j = {{"requests", d.requests},
              {"pool", d.pool},
              {"device", d.device},
              {"cdiDeviceIDs", d.cdi_device_ids},
              {"adminAccess", d.admin_access}};
    if (d.share_id) j["shareID"] = *d.share_id;
    if (!d.gpu_uuid.empty()) {
      j["gpuUUID"] = d.gpu_uuid;
      j["wholeGPU"] = d.whole_gpu;
    }
    devices.push_back(std::move(j));
  }
  json slicing = settings_json(c.time_slicing);
  json out = {{"uid", c.ref.uid},
              {"namespace", c.ref.ns},
              {"name", c.ref.name},
              {"driver", c.driver},
              {"cdiSpecFile", c.cdi_spec_file},
              {"devices", devices},
              {"timeSlicing", slicing}};
  if (!c.exclusive_gpus.empty()) out["exclusiveProcessGPUs"] = c.exclusive_gpus;
  // The request kgpu mps-daemon got, in the request file's own format (one parser for both).
  if (c.mps) out["mps"] = json::parse(render_mps_claim_request(*c.mps));
  if (!c.shares.empty()) {
    json shares = json::array();
    for (const auto& s : c.shares) {
      json j = {{"device", s.device}, {"gpuUUID", s.gpu_uuid}, {"memoryBytes", s.memory_bytes}};
      if (s.multiprocessors) j["multiprocessors"] = *s.multiprocessors;
      if (s.active_thread_percentage) j["activeThreadPercentage"] = *s.active_thread_percentage;
      shares.push_back(std::move(j));
    }
    out["memoryShares"] = std::move(shares);
  }
  if (!c.share_daemons.empty()) {
    json daemons = json::array();
    for (const auto& d : c.share_daemons) daemons.push_back(json::parse(render_mps_claim_request(d)));
    out["shareDaemons"] = std::move(daemons);
  }
  return out;
}

// Our own file, guarded by its checksum; still read without trusting it: a wrong type becomes
// nlohmann's type_error, caught at the one entry point below and turned into an Error.
Result<PreparedClaim> from_json(const json& j) {
  PreparedClaim c;
  c.ref = {j.at("uid").get<std::string>(), j.at("namespace").get<std::string>(), j.at("name").get<std::string>()};
  c.driver = j.at("driver").get<std::string>();
  c.cdi_spec_file = j.at("cdiSpecFile").get<std::string>();
  for (const auto& d : j.at("devices")) {
    PreparedDevice p;
    p.requests = d.at("requests").get<std::vector<std::string>>();
    p.pool = d.at("pool").get<std::string>();
    p.device = d.at("device").get<std::string>();
    p.cdi_device_ids = d.at("cdiDeviceIDs").get<std::vector<std::string>>();
    p.admin_access = d.at("adminAccess").get<bool>();
    if (d.contains("shareID")) p.share_id = d.at("shareID").get<std::string>();
    if (d.contains("gpuUUID")) {
      p.gpu_uuid = d.at("gpuUUID").get<std::string>();
      p.whole_gpu = d.at("wholeGPU").get<bool>();
    }
    c.devices.push_back(std::move(p));
  }
  c.time_slicing = settings_from_json(j.at("timeSlicing"));
  if (j.contains("exclusiveProcessGPUs")) c.exclusive_gpus = j.at("exclusiveProcessGPUs").get<std::vector<std::string>>();
  if (j.contains("mps")) {
    auto request = parse_mps_claim_request(j.at("mps").dump());
    if (!request) return Error::invalid("claim " + c.ref.uid + ": " + request.error().message);
    c.mps = std::move(*request);
  }
  if (j.contains("memoryShares"))
    for (const auto& s : j.at("memoryShares")) {
      GpuShare share;
      share.device = s.at("device").get<std::string>();
      share.gpu_uuid = s.at("gpuUUID").get<std::string>();
      share.memory_bytes = s.at("memoryBytes").get<uint64_t>();
      if (s.contains("multiprocessors")) share.multiprocessors = s.at("multiprocessors").get<uint64_t>();
      if (s.contains("activeThreadPercentage")) share.active_thread_percentage = s.at("activeThreadPercentage").get<int>();
      c.shares.push_back(std::move(share));
    }
  if (j.contains("shareDaemons"))
    for (const auto& d : j.at("shareDaemons")) {
      auto request = parse_mps_claim_request(d.dump());
      if (!request) return Error::invalid("claim " + c.ref.uid + ": share daemon: " + request.error().message);
      c.share_daemons.push_back(std::move(*request));
    }
  return c;
}

json mig_json(const std::vector<MigInstanceRecord>& records) {
  json out = json::array();
  for (const auto& r : records) {
    json j = {{"claim", r.claim_uid},
              {"device", r.device},
              {"parentUUID", r.placement.parent_uuid},
              {"profileID", r.placement.profile_id},
              {"start", r.placement.start},
              {"size", r.placement.size},
              {"gpuInstancesBefore", r.gpu_instances_before}};
    if (r.made) {
      json nodes = json::array();
      for (const auto& n : r.made->capability_nodes) nodes.push_back(n.path);
      j["made"] = {{"gi", r.made->gpu_instance_id},
                   {"ci", r.made->compute_instance_id},
                   {"migUUID", r.made->mig_uuid},
                   {"nodes", nodes}};
    }
    out.push_back(std::move(j));
  }
  return out;
}

std::vector<MigInstanceRecord> mig_from_json(const json& list) {
  std::vector<MigInstanceRecord> out;
  for (const auto& j : list) {
    MigInstanceRecord r;
    r.claim_uid = j.at("claim").get<std::string>();
    r.device = j.at("device").get<std::string>();
    r.placement = {j.at("parentUUID").get<std::string>(), j.at("profileID").get<unsigned>(),
                   j.at("start").get<unsigned>(), j.at("size").get<unsigned>()};
    r.gpu_instances_before = j.at("gpuInstancesBefore").get<std::vector<unsigned>>();
    if (j.contains("made")) {
      const json& m = j.at("made");
      MigInstanceMade made;
      made.gpu_instance_id = m.at("gi").get<unsigned>();
      made.compute_instance_id = m.at("ci").get<unsigned>();
      made.mig_uuid = m.at("migUUID").get<std::string>();
      for (const auto& n : m.at("nodes")) made.capability_nodes.push_back({n.get<std::string>()});
      r.made = std::move(made);
    }
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace

std::string checkpoint_text(const Checkpoint& checkpoint) {
  json claims = json::array();
  for (const auto& c : checkpoint.claims) claims.push_back(to_json(c));
  // Claim fields came from the API server as valid UTF-8; replace keeps dump() total anyway.
  json pending = settings_json(checkpoint.pending_resets);
  json doc = {{"kind", kKind},
              {"version", kCheckpointVersion},
              {"bootID", checkpoint.boot_id},
              {"checksum", checksum(compact(claims))},
              {"claims", claims}};
  if (!pending.empty()) {
    doc["pendingChecksum"] = checksum(compact(pending));
    doc["pendingGpuResets"] = std::move(pending);
  }
  if (!checkpoint.mig_instances.empty()) {
    json mig = mig_json(checkpoint.mig_instances);
    doc["migChecksum"] = checksum(compact(mig));
    doc["migInstances"] = std::move(mig);
  }
  return doc.dump(1, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<Checkpoint> parse_checkpoint(std::string_view text) {
  if (text.size() > kMaxCheckpointBytes)
    return Error::invalid("checkpoint is larger than " + std::to_string(kMaxCheckpointBytes) + " bytes");
  if (auto deep = check_json_depth(text, "checkpoint"); !deep) return deep.error();
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return Error::invalid("checkpoint is not a JSON object");
  try {
    if (doc.value("kind", "") != kKind) return Error::invalid("checkpoint kind is not " + std::string(kKind));
    const json& version = doc.at("version");
    if (version.is_number_integer() && version.get<int64_t>() > kCheckpointVersion)
      return Error::precondition("checkpoint version " + version.dump() + " is newer than this kgpu reads (" +
                                 std::to_string(kCheckpointVersion) + "): written by a newer kgpu (a rollback?)");
    if (!version.is_number_integer() || version.get<int64_t>() != kCheckpointVersion)
      return Error::invalid("checkpoint version " + version.dump() + " is not " + std::to_string(kCheckpointVersion));
    const json& claims = doc.at("claims");
    if (!claims.is_array()) return Error::invalid("checkpoint claims is not an array");
    const std::string expected = doc.at("checksum").get<std::string>();
    if (checksum(compact(claims)) != expected)
      return Error::invalid("checkpoint checksum does not match its content (cut short or edited)");
    Checkpoint out;
    out.boot_id = doc.at("bootID").get<std::string>();
    if (doc.contains("pendingGpuResets")) {
      const json& pending = doc.at("pendingGpuResets");
      if (!pending.is_array() || checksum(compact(pending)) != doc.at("pendingChecksum").get<std::string>())
        return Error::invalid("checkpoint pendingGpuResets do not match their checksum (cut short or edited)");
      out.pending_resets = settings_from_json(pending);
    }
    if (doc.contains("migInstances")) {
      const json& mig = doc.at("migInstances");
      if (!mig.is_array() || checksum(compact(mig)) != doc.at("migChecksum").get<std::string>())
        return Error::invalid("checkpoint migInstances do not match their checksum (cut short or edited)");
      out.mig_instances = mig_from_json(mig);
    }
    for (const auto& c : claims) {
      auto claim = from_json(c);
      if (!claim) return claim.error();
      out.claims.push_back(std::move(*claim));
    }
    return out;
  } catch (const json::exception& e) {
    return Error::invalid(std::string("checkpoint field missing or of the wrong type: ") + e.what());
  }
}

}  // namespace kgpu::dra
