#include "mps/claim_request.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <nlohmann/json.hpp>

#include "core/json_depth.h"
#include "plan/mps_paths.h"

namespace kgpu {

namespace {

using nlohmann::json;

constexpr std::string_view kApiVersion = "kgpu.io/v1";
constexpr std::string_view kKind = "MpsClaimDaemon";
constexpr std::string_view kRequestSuffix = ".json";
constexpr size_t kMaxIdLength = 128;

// A value for an error message: JSON text, cut short (the file may hold anything).
std::string shown(const json& value) {
  std::string text = value.dump(-1, ' ', false, json::error_handler_t::replace);
  if (text.size() > 80) text = text.substr(0, 80) + "...";
  return text;
}

bool is_id(std::string_view id) {
  if (id.empty() || id.size() > kMaxIdLength) return false;
  return std::all_of(id.begin(), id.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-';
  });
}

Result<std::string> text_member(const json& doc, const char* key) {
  auto it = doc.find(key);
  if (it == doc.end()) return Error::invalid(std::string("MPS claim request: ") + key + " is missing");
  if (!it->is_string())
    return Error::invalid(std::string("MPS claim request: ") + key + " must be a string, not " + shown(*it));
  return it->get<std::string>();
}

Result<std::vector<std::string>> parse_devices(const json& doc) {
  auto it = doc.find("visibleDevices");
  if (it == doc.end() || !it->is_array() || it->empty() || it->size() > kMpsClaimMaxDevices)
    return Error::invalid("MPS claim request: visibleDevices must be a list of 1 to " +
                          std::to_string(kMpsClaimMaxDevices) + " GPU UUIDs");
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& d : *it) {
    if (!d.is_string() || !is_cuda_device_id(d.get<std::string>()))
      return Error::invalid("MPS claim request: visibleDevices entry " + shown(d) +
                            " is not 1 to 128 letters, digits and dashes");
    if (!seen.insert(d.get<std::string>()).second)
      return Error::invalid("MPS claim request: visibleDevices names " + shown(d) + " twice");
    out.push_back(d.get<std::string>());
  }
  return out;
}

Result<std::map<int, uint64_t>> parse_limits(const json& doc, size_t devices) {
  std::map<int, uint64_t> out;
  auto it = doc.find("pinnedDeviceMemoryLimitsMiB");
  if (it == doc.end()) return out;
  if (!it->is_object()) return Error::invalid("MPS claim request: pinnedDeviceMemoryLimitsMiB must be an object");
  for (auto limit = it->begin(); limit != it->end(); ++limit) {
    const std::string& key = limit.key();
    int ordinal = -1;
    auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), ordinal);
    if (ec != std::errc() || end != key.data() + key.size() || ordinal < 0 || static_cast<size_t>(ordinal) >= devices)
      return Error::invalid("MPS claim request: pinnedDeviceMemoryLimitsMiB key " + shown(key) +
                            " is not an ordinal of visibleDevices (0 to " + std::to_string(devices - 1) + ")");
    const json& mib = limit.value();
    if (!mib.is_number_unsigned() || mib.get<uint64_t>() == 0 || mib.get<uint64_t>() > kMpsClaimMaxPinnedMib)
      return Error::invalid("MPS claim request: pinned memory limit for ordinal " + key + " must be 1 to " +
                            std::to_string(kMpsClaimMaxPinnedMib) + " MiB, not " + shown(mib));
    out[ordinal] = mib.get<uint64_t>();
  }
  return out;
}

Result<MpsClaimRequest> parse_document(const json& doc) {
  if (!doc.is_object()) return Error::invalid("MPS claim request must be a JSON object");
  static const std::set<std::string_view> known{"apiVersion",     "kind", "claimUID", "visibleDevices",
                                                "activeThreadPercentage", "pinnedDeviceMemoryLimitsMiB"};
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (!known.count(it.key())) return Error::invalid("MPS claim request: unknown field " + shown(it.key()));
  auto api_version = text_member(doc, "apiVersion");
  if (!api_version) return api_version.error();
  auto kind = text_member(doc, "kind");
  if (!kind) return kind.error();
  if (*api_version != kApiVersion || *kind != kKind)
    return Error::invalid("MPS claim request is " + shown(*api_version) + " " + shown(*kind) + ", not " +
                          std::string(kApiVersion) + " " + std::string(kKind));
  MpsClaimRequest out;
  auto uid = text_member(doc, "claimUID");
  if (!uid) return uid.error();
  if (!is_safe_claim_uid(*uid))
    return Error::invalid("MPS claim request: claimUID " + shown(*uid) + " is not 1 to 128 letters, digits and dashes");
  out.claim_uid = std::move(*uid);
  auto devices = parse_devices(doc);
  if (!devices) return devices.error();
  out.visible_devices = std::move(*devices);
  if (auto it = doc.find("activeThreadPercentage"); it != doc.end()) {
    // 0..100, as NVIDIA's driver takes defaultActiveThreadPercentage (0 is passed on to MPS).
    if (!it->is_number_unsigned() || it->get<uint64_t>() > 100)
      return Error::invalid("MPS claim request: activeThreadPercentage must be 0 to 100, not " + shown(*it));
    out.active_thread_percentage = static_cast<int>(it->get<uint64_t>());
  }
  auto limits = parse_limits(doc, out.visible_devices.size());
  if (!limits) return limits.error();
  out.pinned_mib = std::move(*limits);
  return out;
}

std::string join_commas(const std::vector<std::string>& items) {
  std::string out;
  for (const auto& item : items) out += (out.empty() ? "" : ",") + item;
  return out;
}

}  // namespace

bool is_safe_claim_uid(std::string_view uid) { return is_id(uid); }
bool is_cuda_device_id(std::string_view id) { return is_id(id); }

std::string mps_claim_requests_dir(const std::string& mps_root) { return mps_resource_dir(mps_root, "dra-requests"); }

std::string mps_claim_request_file(const std::string& mps_root, const std::string& claim_uid) {
  return mps_claim_requests_dir(mps_root) + "/" + claim_uid + std::string(kRequestSuffix);
}

std::string mps_claim_resource(const std::string& claim_uid) { return "dra/" + claim_uid; }

std::string mps_claim_failure_note(const std::string& mps_root, const std::string& claim_uid) {
  return mps_resource_dir(mps_root, mps_claim_resource(claim_uid)) + "/.failed";
}

std::string mps_claim_shm_dir(const std::string& mps_root, const std::string& claim_uid) {
  return mps_resource_dir(mps_root, mps_claim_resource(claim_uid)) + "/shm";
}

std::optional<std::string> claim_uid_of_request_file(std::string_view file_name) {
  if (!file_name.ends_with(kRequestSuffix)) return std::nullopt;
  file_name.remove_suffix(kRequestSuffix.size());
  if (!is_safe_claim_uid(file_name)) return std::nullopt;
  return std::string(file_name);
}

std::string render_mps_claim_request(const MpsClaimRequest& request) {
  json doc = {{"apiVersion", kApiVersion},
              {"kind", kKind},
              {"claimUID", request.claim_uid},
              {"visibleDevices", request.visible_devices}};
  if (request.active_thread_percentage) doc["activeThreadPercentage"] = *request.active_thread_percentage;
  if (!request.pinned_mib.empty()) {
    json limits = json::object();
    for (const auto& [ordinal, mib] : request.pinned_mib) limits[std::to_string(ordinal)] = mib;
    doc["pinnedDeviceMemoryLimitsMiB"] = std::move(limits);
  }
  // Total even for text that is not UTF-8 (a request prepare_claim refuses such IDs before).
  return doc.dump(2, ' ', false, json::error_handler_t::replace) + "\n";
}

Result<MpsClaimRequest> parse_mps_claim_request(std::string_view text) {
  if (text.size() > kMpsClaimRequestMaxBytes)
    return Error::invalid("MPS claim request is " + std::to_string(text.size()) + " bytes, more than " +
                          std::to_string(kMpsClaimRequestMaxBytes));
  if (auto deep = check_json_depth(text, "MPS claim request"); !deep) return deep.error();
  const json doc = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error::invalid("MPS claim request is not valid JSON");
  return parse_document(doc);
}

MpsDaemonSpec mps_claim_daemon_spec(const std::string& mps_root, const MpsClaimRequest& request,
                                    uint64_t shm_bytes) {
  const std::string resource = mps_claim_resource(request.claim_uid);
  MpsDaemonSpec spec;
  spec.resource = resource;
  spec.pipe_dir = mps_pipe_dir(mps_root, resource);
  spec.log_dir = mps_log_dir(mps_root, resource);
  spec.ready_marker = mps_ready_marker(mps_root, resource);
  spec.failure_note = mps_claim_failure_note(mps_root, request.claim_uid);
  spec.visible_devices = join_commas(request.visible_devices);
  spec.shm_dir = mps_claim_shm_dir(mps_root, request.claim_uid);
  spec.shm_bytes = shm_bytes;
  for (const auto& [ordinal, mib] : request.pinned_mib)
    spec.commands.push_back("set_default_device_pinned_mem_limit " + std::to_string(ordinal) + " " +
                            std::to_string(mib) + "M");
  if (request.active_thread_percentage)
    spec.commands.push_back("set_default_active_thread_percentage " +
                            std::to_string(*request.active_thread_percentage));
  return spec;
}

}  // namespace kgpu
