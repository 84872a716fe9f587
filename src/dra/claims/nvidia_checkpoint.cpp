#include "dra/claims/nvidia_checkpoint.h"

#include <algorithm>
#include <map>
#include <optional>

#include <nlohmann/json.hpp>

#include "core/json_depth.h"
#include "dra/model/claim.h"
#include "mps/claim_request.h"

namespace kgpu::dra {

namespace {

using nlohmann::json;

// "v1", "V3", "v12": a section of some version of NVIDIA's format.
bool is_version_key(std::string_view key) {
  return key.size() >= 2 && (key[0] == 'v' || key[0] == 'V') &&
         std::all_of(key.begin() + 1, key.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool ascii_iequal(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           auto lower = [](char ch) { return ch >= 'A' && ch <= 'Z' ? static_cast<char>(ch - 'A' + 'a') : ch; };
           return lower(x) == lower(y);
         });
}

// The reading of one file: the first error of the part being read, with where it is
// ("v2.preparedClaims[\"<uid>\"]...").
class Reader {
 public:
  explicit Reader(std::string driver) : driver_(std::move(driver)) {}

  bool failed() const { return error_.has_value(); }
  const std::string& error() const { return *error_; }

  // Whole-file errors (the root not an object) give nullopt. Everything below is read per part: a
  // section or claim entry that cannot be read is passed over, with why, in `skipped`, and the
  // rest is still read (one bad entry must not drop every other claim's hold).
  std::optional<NvidiaCheckpoint> read(const json& root) {
    if (!root.is_object()) return fail("the file", "a JSON object"), std::nullopt;
    std::map<std::string, NvidiaClaim> claims;
    NvidiaCheckpoint out;
    for (const auto& [key, value] : root.items())
      if (is_version_key(key) && !ascii_iequal(key, "v1") && !ascii_iequal(key, "v2") && !value.is_null())
        out.unknown_sections.push_back(key);
    auto pass_over = [&] {
      out.skipped.push_back(*error_ + "; passed over");
      error_.reset();
    };
    for (const std::string section : {"v2", "v1"}) {
      const json* s = object(root, section, section);
      if (failed()) pass_over();
      if (!s) continue;
      const std::string where = section + ".preparedClaims";
      const json* prepared = object(*s, "preparedClaims", where);
      if (failed()) pass_over();
      if (!prepared) continue;
      for (const auto& [uid, entry] : prepared->items()) {
        const std::string at = where + "[" + quote_text(uid) + "]";
        if (!is_safe_claim_uid(uid)) {
          out.skipped.push_back(at + ": " + quote_text(uid) + " is not a Kubernetes UID; passed over");
          continue;
        }
        if (claims.contains(uid)) continue;  // "v1" repeats the completed claims of "v2"
        auto claim = read_claim(uid, entry, at, section);
        if (failed()) {
          pass_over();
          continue;
        }
        claims.emplace(uid, std::move(claim));
      }
    }
    for (auto& [uid, c] : claims) out.claims.push_back(std::move(c));
    return out;
  }

 private:
  void fail(const std::string& where, std::string_view expected) {
    if (!error_) error_ = where + ": expected " + std::string(expected);
  }

  // Go's encoding/json: the exact key, else one equal to it ignoring ASCII case. nullptr when
  // absent or null.
  static const json* member(const json& obj, std::string_view key) {
    if (!obj.is_object()) return nullptr;
    const json* found = nullptr;
    if (auto it = obj.find(std::string(key)); it != obj.end()) found = &*it;
    else
      for (const auto& [k, v] : obj.items())
        if (ascii_iequal(k, key)) {
          found = &v;
          break;
        }
    return found && !found->is_null() ? found : nullptr;
  }
  const json* object(const json& obj, std::string_view key, const std::string& where) {
    const json* v = member(obj, key);
    if (v && !v->is_object()) return fail(where, "an object"), nullptr;
    return v;
  }
  const json* array(const json& obj, std::string_view key, const std::string& where) {
    const json* v = member(obj, key);
    if (v && !v->is_array()) return fail(where, "an array"), nullptr;
    return v;
  }
  std::string string(const json& obj, std::string_view key, const std::string& where) {
    const json* v = member(obj, key);
    if (!v) return "";
    if (!v->is_string()) return fail(where, "a string"), "";
    return v->get<std::string>();
  }
  bool boolean(const json& obj, std::string_view key, const std::string& where) {
    const json* v = member(obj, key);
    if (!v) return false;
    if (!v->is_boolean()) return fail(where, "true or false"), false;
    return v->get<bool>();
  }
  std::vector<std::string> strings(const json& obj, std::string_view key, const std::string& where) {
    std::vector<std::string> out;
    const json* v = array(obj, key, where);
    if (!v) return out;
    for (size_t i = 0; i < v->size(); ++i) {
      const json& s = (*v)[i];
      if (!s.is_string()) {
        fail(where + "[" + std::to_string(i) + "]", "a string");
        return {};
      }
      out.push_back(s.get<std::string>());
    }
    return out;
  }

  struct Allocated {
    std::string pool, device;
    bool admin = false;
  };

  NvidiaClaim read_claim(const std::string& uid, const json& entry, const std::string& at, const std::string& section) {
    NvidiaClaim claim;
    claim.uid = uid;
    claim.section = section;
    static const json kEmpty = json::object();
    const json& e = entry.is_null() ? kEmpty : entry;
    if (!e.is_object()) return fail(at, "an object"), claim;
    if (section == "v2") {
      claim.completed = string(e, "checkpointState", at + ".checkpointState") == "PrepareCompleted";
      claim.ns = string(e, "namespace", at + ".namespace");
      claim.name = string(e, "name", at + ".name");
    } else {
      claim.completed = true;  // v1 recorded completed claims only
    }
    std::vector<Allocated> allocated = read_status(e, at + ".status", claim);
    if (const json* groups = array(e, "preparedDevices", at + ".preparedDevices"))
      for (size_t g = 0; g < groups->size() && !failed(); ++g) {
        const std::string gat = at + ".preparedDevices[" + std::to_string(g) + "]";
        const json& group = (*groups)[g];
        if (group.is_null()) continue;
        if (!group.is_object()) return fail(gat, "an object"), claim;
        if (const json* state = object(group, "configState", gat + ".configState")) {
          std::string mps = string(*state, "mpsControlDaemonID", gat + ".configState.mpsControlDaemonID");
          if (claim.mps_control_daemon.empty()) claim.mps_control_daemon = std::move(mps);
        }
        const json* devices = array(group, "devices", gat + ".devices");
        if (!devices) continue;
        for (size_t d = 0; d < devices->size() && !failed(); ++d)
          if (auto device = read_device((*devices)[d], gat + ".devices[" + std::to_string(d) + "]", allocated))
            claim.devices.push_back(std::move(*device));
      }
    return claim;
  }

  std::vector<Allocated> read_status(const json& e, const std::string& at, NvidiaClaim& claim) {
    std::vector<Allocated> out;
    const json* status = object(e, "status", at);
    if (!status) return out;
    if (const json* reserved = array(*status, "reservedFor", at + ".reservedFor"))
      for (size_t i = 0; i < reserved->size() && !failed(); ++i) {
        const std::string rat = at + ".reservedFor[" + std::to_string(i) + "]";
        if (!(*reserved)[i].is_object()) return fail(rat, "an object"), out;
        std::string name = string((*reserved)[i], "name", rat + ".name");
        if (!name.empty()) claim.pods.push_back(std::move(name));
      }
    const json* allocation = object(*status, "allocation", at + ".allocation");
    if (!allocation) return out;
    const json* devices = object(*allocation, "devices", at + ".allocation.devices");
    if (!devices) return out;
    const std::string dat = at + ".allocation.devices";
    if (const json* results = array(*devices, "results", dat + ".results"))
      for (size_t i = 0; i < results->size() && !failed(); ++i) {
        const std::string rat = dat + ".results[" + std::to_string(i) + "]";
        const json& r = (*results)[i];
        if (!r.is_object()) return fail(rat, "an object"), out;
        const std::string driver = string(r, "driver", rat + ".driver");
        Allocated a{string(r, "pool", rat + ".pool"), string(r, "device", rat + ".device"),
                    boolean(r, "adminAccess", rat + ".adminAccess")};
        if (driver != driver_ || a.device.empty()) continue;
        claim.allocated.push_back(a.device);
        out.push_back(std::move(a));
      }
    if (const json* configs = array(*devices, "config", dat + ".config"))
      for (size_t i = 0; i < configs->size() && !failed(); ++i) {
        const std::string cat = dat + ".config[" + std::to_string(i) + "]";
        if (!(*configs)[i].is_object()) return fail(cat, "an object"), out;
        if (const json* opaque = object((*configs)[i], "opaque", cat + ".opaque"))
          claim.has_config = claim.has_config || string(*opaque, "driver", cat + ".opaque.driver") == driver_;
      }
    return out;
  }

  std::optional<PreparedDevice> read_device(const json& entry, const std::string& at,
                                            const std::vector<Allocated>& allocated) {
    if (entry.is_null()) return std::nullopt;
    if (!entry.is_object()) return fail(at, "an object"), std::nullopt;
    // The kind of device: "gpu", "mig", "vfio", or (a later release's) any other member holding a
    // kubelet device.
    std::string kind;
    const json* body = nullptr;
    for (const char* k : {"gpu", "mig", "vfio"})
      if ((body = object(entry, k, at + "." + k))) {
        kind = k;
        break;
      }
    if (failed()) return std::nullopt;
    if (!body)
      for (const auto& [k, v] : entry.items())
        if (v.is_object() && member(v, "device")) {
          kind = k;
          body = &v;
          break;
        }
    if (!body) return fail(at, "a \"gpu\", \"mig\" or \"vfio\" device"), std::nullopt;
    const std::string kat = at + "." + kind;
    const json* device = object(*body, "device", kat + ".device");
    if (failed()) return std::nullopt;
    if (!device) return fail(kat + ".device", "the device the kubelet was answered"), std::nullopt;
    const std::string dat = kat + ".device";
    PreparedDevice p;
    p.requests = strings(*device, "Requests", dat + ".Requests");
    p.pool = string(*device, "PoolName", dat + ".PoolName");
    p.device = string(*device, "DeviceName", dat + ".DeviceName");
    p.cdi_device_ids = strings(*device, "CDIDeviceIDs", dat + ".CDIDeviceIDs");
    if (failed()) return std::nullopt;
    if (p.pool.empty()) return fail(dat + ".PoolName", "a pool name"), std::nullopt;
    if (p.device.empty()) return fail(dat + ".DeviceName", "a device name"), std::nullopt;

    const json* info = object(*body, "info", kat + ".info");
    const std::string info_uuid = info ? string(*info, "uuid", kat + ".info.uuid") : "";
    if (kind == "mig") {
      const json* concrete = object(*body, "concrete", kat + ".concrete");
      std::string parent = concrete ? string(*concrete, "parentUUID", kat + ".concrete.parentUUID") : "";
      if (parent.empty() && info) parent = string(*info, "parentUUID", kat + ".info.parentUUID");
      std::string own = concrete ? string(*concrete, "migUUID", kat + ".concrete.migUUID") : "";
      if (own.empty()) own = info_uuid;
      p.gpu_uuid = !parent.empty() ? parent : own;
      p.whole_gpu = false;
    } else {
      p.gpu_uuid = info_uuid;
      p.whole_gpu = kind == "gpu" || kind == "vfio" || info_uuid.starts_with("GPU-");
    }
    if (failed()) return std::nullopt;
    for (const auto& a : allocated)
      if (a.admin && a.pool == p.pool && a.device == p.device) p.admin_access = true;
    return p;
  }

  const std::string driver_;
  std::optional<std::string> error_;
};

}  // namespace

Result<NvidiaCheckpoint> parse_nvidia_checkpoint(std::string_view text, const std::string& driver) {
  if (text.size() > kMaxNvidiaCheckpointBytes)
    return Error::invalid("larger than " + std::to_string(kMaxNvidiaCheckpointBytes >> 20) + " MiB");
  if (auto st = check_json_depth(text, "the checkpoint"); !st) return st.error();
  const json root = json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (root.is_discarded()) return Error::invalid("not JSON");
  Reader reader(driver);
  auto out = reader.read(root);
  if (!out) return Error::invalid(reader.error());
  return std::move(*out);
}

std::string nvidia_claim_spec_file(const std::string& driver, const std::string& claim_uid) {
  return "k8s." + driver + "-claim_" + claim_uid + ".yaml";
}

}  // namespace kgpu::dra
