#include "config/checks.h"

#include <algorithm>
#include <cctype>
#include <set>

#include "config/go_duration.h"
#include "core/quantity.h"
#include "config/settings.h"

namespace kgpu::config_detail {
namespace {

class Reporter {
 public:
  Reporter(const CheckInput& in, std::vector<Diagnostic>& out) : in_(in), out_(out) {}

  // A diagnostic placed where `key` got its value: the file position, or the env var / flag.
  void report(Diagnostic::Severity severity, const std::string& key, std::string message) {
    Diagnostic d{severity, in_.file, 0, 0, std::move(message)};
    auto origin = in_.origins.find(key);
    if (origin != in_.origins.end() && origin->second != "file" && origin->second != "default") {
      d.file = origin->second;
    } else if (auto p = in_.positions.find(key); p != in_.positions.end()) {
      d.line = p->second.line;
      d.column = p->second.column;
    }
    out_.push_back(std::move(d));
  }
  void error(const std::string& key, std::string message) {
    report(Diagnostic::Severity::Error, key, std::move(message));
  }

 private:
  const CheckInput& in_;
  std::vector<Diagnostic>& out_;
};

bool valid_cdi_kind(const std::string& kind) {
  // CDI: "<vendor>/<class>"; vendor is a DNS-like name, class alphanumerics, '-' and '_'.
  auto slash = kind.find('/');
  if (slash == std::string::npos || slash == 0 || slash + 1 == kind.size()) return false;
  std::string vendor = kind.substr(0, slash), cls = kind.substr(slash + 1);
  auto alnum = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0; };
  if (!alnum(vendor.front()) || !alnum(vendor.back()) || !alnum(cls.front()) || !alnum(cls.back()))
    return false;
  for (char c : vendor)
    if (!alnum(c) && c != '-' && c != '.' && c != '_') return false;
  for (char c : cls)
    if (!alnum(c) && c != '-' && c != '_') return false;
  return true;
}

// A DNS subdomain (RFC 1123), as Kubernetes requires of a DRA driver name: it also names the
// driver's folder under <kubelet root>/plugins/, so nothing like "../x" may pass.
bool valid_dns_subdomain(const std::string& name) {
  if (name.empty() || name.size() > 253) return false;
  size_t label_start = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i < name.size() && name[i] != '.') {
      const char c = name[i];
      if (!(std::islower(static_cast<unsigned char>(c)) || std::isdigit(static_cast<unsigned char>(c)) || c == '-'))
        return false;
      continue;
    }
    const std::string label = name.substr(label_start, i - label_start);
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    label_start = i + 1;
  }
  return true;
}

// A GPU index ("3") or an NVIDIA GPU UUID ("GPU-..."), the forms kgpu.dra.gpus matches against.
bool valid_dra_gpu_entry(const std::string& entry) {
  const bool index = !entry.empty() && entry.size() <= 9 &&
                     std::all_of(entry.begin(), entry.end(), [](char c) { return c >= '0' && c <= '9'; });
  return index || (entry.starts_with("GPU-") && entry.size() > 4);
}

// kgpu.dra.mig.dynamic: which GPUs. A GPU whose layout the scheduler picks at prepare cannot also be
// handed out in memory shares of its whole (the shares' MPS server would sit on a GPU whose MIG
// instances come and go), so a GPU named by both lists, or "all" in both, is an error.
void check_dynamic_mig(const Config& c, Reporter& r) {
  const std::string key = "kgpu.dra.mig.dynamic";
  const auto& gpus = c.dra.mig_dynamic;
  const bool all = std::find(gpus.begin(), gpus.end(), "all") != gpus.end();
  if (all && gpus.size() > 1) r.error(key, key + " is either [all] or a list of GPU indexes and UUIDs, not both");
  for (const auto& entry : gpus)
    if (entry != "all" && !valid_dra_gpu_entry(entry))
      r.error(key, key + " entry \"" + entry + "\" is neither a GPU index nor a GPU UUID (GPU-...) nor all");
  const auto& shared = c.dra.memory_sharing.gpus;
  const bool all_shared = std::find(shared.begin(), shared.end(), "all") != shared.end();
  for (const auto& entry : gpus) {
    const bool both = all_shared ? !gpus.empty()
                                 : entry == "all" ? !shared.empty()
                                                  : std::find(shared.begin(), shared.end(), entry) != shared.end();
    if (both) {
      r.error(key, key + " and kgpu.dra.sharing.memory.gpus both name " +
                       (entry == "all" || all_shared ? std::string("every GPU") : "GPU " + entry) +
                       ": a GPU is either split into MIG instances at prepare or shared whole through MPS");
      return;
    }
  }
}

// kgpu.dra.sharing.memory: which GPUs, and a request policy the API server accepts (default within
// the valid range min + k * step) and MPS can enforce (whole MiB, at least 1 MiB).
void check_memory_sharing(const Config& c, Reporter& r) {
  const DraMemorySharing& m = c.dra.memory_sharing;
  const std::string gpus_key = "kgpu.dra.sharing.memory.gpus";
  const bool all = std::find(m.gpus.begin(), m.gpus.end(), "all") != m.gpus.end();
  if (all && m.gpus.size() > 1)
    r.error(gpus_key, gpus_key + " is either [all] or a list of GPU indexes and UUIDs, not both");
  for (const auto& entry : m.gpus)
    if (entry != "all" && !valid_dra_gpu_entry(entry))
      r.error(gpus_key, gpus_key + " entry \"" + entry + "\" is neither a GPU index nor a GPU UUID (GPU-...) nor all");
  if (m.gpus.empty()) return;
  if (c.mps_root.empty())
    r.error(gpus_key, gpus_key + " needs an MPS root (flags.mpsRoot, MPS_ROOT or --mps-root): each memory share is "
                                 "an MPS client of its GPU's control daemon");
  if (m.active_thread_percentage > 100)
    r.error("kgpu.dra.sharing.memory.activeThreadPercentage",
            "kgpu.dra.sharing.memory.activeThreadPercentage is " + std::to_string(m.active_thread_percentage) +
                "; a percentage is 0 (none) to 100");
  struct Amount {
    const char* key;
    const std::string* text;
    uint64_t bytes = 0;
  };
  Amount amounts[] = {{"kgpu.dra.sharing.memory.requestPolicy.default", &m.default_share},
                      {"kgpu.dra.sharing.memory.requestPolicy.min", &m.min_share},
                      {"kgpu.dra.sharing.memory.requestPolicy.step", &m.share_step}};
  bool all_parsed = true;
  for (auto& a : amounts) {
    auto bytes = parse_quantity_bytes(*a.text);
    if (!bytes) {
      r.error(a.key, std::string(a.key) + ": " + bytes.error().message);
      all_parsed = false;
    } else if (*bytes < (uint64_t{1} << 20)) {
      r.error(a.key, std::string(a.key) + " is " + *a.text + "; MPS limits memory in whole MiB, so a share and its "
                                                             "step are at least 1Mi");
      all_parsed = false;
    } else {
      a.bytes = *bytes;
    }
  }
  if (!all_parsed) return;
  const uint64_t def = amounts[0].bytes, min = amounts[1].bytes, step = amounts[2].bytes;
  if (def < min || (def - min) % step != 0)
    r.error(amounts[0].key, std::string(amounts[0].key) + " " + m.default_share +
                                " is not a valid share: shares are the minimum " + m.min_share + " plus whole steps of " +
                                m.share_step + " (the API server refuses such a request policy)");
}

void check_dra(const Config& c, Reporter& r) {
  if (!c.dra.enabled && !c.dra.device_plugin)
    r.error("kgpu.dra.devicePlugin",
            "kgpu.dra.devicePlugin is false and kgpu.dra.enabled is not set: nothing would be served");
  const std::pair<const char*, const std::string*> drivers[] = {
      {"kgpu.dra.driver", &c.dra.driver}, {"kgpu.dra.amdDriver", &c.dra.amd_driver},
      {"kgpu.dra.intelDriver", &c.dra.intel_driver}};
  for (const auto& [key, name] : drivers)
    if (!valid_dns_subdomain(*name))
      r.error(key, "invalid DRA driver name \"" + *name + "\" (expected a DNS subdomain, e.g. gpu.nvidia.com)");
  if (c.dra.driver == c.dra.amd_driver || c.dra.driver == c.dra.intel_driver || c.dra.amd_driver == c.dra.intel_driver)
    r.error("kgpu.dra.driver", "the NVIDIA, AMD and Intel DRA driver names must differ (each has its own sockets, "
                               "slices and claims)");
  std::set<std::string> vendors;
  for (const auto& v : c.dra.vendors)  // the parser has checked each is nvidia, amd or intel
    if (!vendors.insert(v).second)
      r.error("kgpu.dra.vendors", "vendor \"" + v + "\" is listed twice in kgpu.dra.vendors");
  if (!c.dra.gpus.empty() && !vendors.contains("nvidia"))
    r.error("kgpu.dra.gpus", "kgpu.dra.gpus names NVIDIA GPUs, but kgpu.dra.vendors leaves NVIDIA out");
  for (const auto& entry : c.dra.gpus)
    if (!valid_dra_gpu_entry(entry))
      r.error("kgpu.dra.gpus", "kgpu.dra.gpus entry \"" + entry +
                                   "\" is neither a GPU index nor a GPU UUID (GPU-...); MIG devices follow their GPU");
  check_memory_sharing(c, r);
  check_dynamic_mig(c, r);
}

}  // namespace

bool valid_go_duration(const std::string& text) {
  // "-1s" is a valid Go duration but no valid interval; NVIDIA's tools accept it, so do we.
  if (text.empty()) return false;
  return parse_go_duration(text[0] == '-' ? text.substr(1) : text).has_value();
}

void check_effective_config(const CheckInput& in, std::vector<Diagnostic>& out) {
  Reporter r(in, out);
  const Config& c = in.config;

  if (c.mps) {
    if (c.mps_root.empty()) {
      // An error for `config validate` too: it must say what `kgpu plugin` will do with the file,
      // which is refuse to start. A root the deployment gives (the chart's MPS_ROOT) is passed to
      // validate as --mps-root.
      r.error("sharing.mps", "sharing.mps requires an MPS root: set flags.mpsRoot, MPS_ROOT or --mps-root");
    }
    // MPS cannot share MIG devices. Under `mixed` that concerns only the MIG resources, so only
    // those entries are errors; MPS on the full-GPU resource stays valid.
    if (c.mig_strategy == MigStrategy::Mixed) {
      for (size_t i = 0; i < c.mps->resources.size(); ++i) {
        const auto& res = c.mps->resources[i];
        if (res.name.starts_with("nvidia.com/mig-"))
          r.error("sharing.mps.resources[" + std::to_string(i) + "]",
                  "MPS cannot share MIG devices: \"" + res.name +
                      "\" is a MIG resource under migStrategy mixed (use sharing.timeSlicing)");
      }
    }
  }
  // Only channel 0 exists today; NVIDIA refuses anything else the same way.
  if (c.imex_channel_ids.size() > 1 || (c.imex_channel_ids.size() == 1 && c.imex_channel_ids[0] != 0)) {
    std::string found;
    for (int id : c.imex_channel_ids) found += (found.empty() ? "" : " ") + std::to_string(id);
    r.error("imex.channelIDs", "imex.channelIDs must be [] or [0]; found [" + found + "]");
  }
  if (!valid_cdi_kind(c.cdi_kind))
    r.error("kgpu.cdiKind", "invalid CDI kind \"" + c.cdi_kind +
                                "\" (expected <vendor>/<class>, e.g. k8s.device-plugin.nvidia.com/gpu)");
  if (c.has_strategy(DeviceListStrategy::CdiAnnotations) && c.cdi_annotation_prefix.empty())
    r.error("flags.plugin.cdiAnnotationPrefix",
            "cdiAnnotationPrefix must not be empty with the cdi-annotations strategy");
  if (!valid_go_duration(c.gfd_sleep_interval))
    r.error("flags.gfd.sleepInterval", "invalid duration \"" + c.gfd_sleep_interval +
                                           "\" for gfd.sleepInterval (e.g. 60s, 1m30s, infinite)");
  if (c.health.recovery_probe_interval_ms > c.health.recovery_probe_max_interval_ms)
    r.error("kgpu.health.recovery.probeIntervalMs",
            "kgpu.health.recovery.probeIntervalMs (" + std::to_string(c.health.recovery_probe_interval_ms) +
                ") is larger than probeMaxIntervalMs (" +
                std::to_string(c.health.recovery_probe_max_interval_ms) + ")");
  if (c.health.recovery_enabled && c.health.recovery_probe_interval_ms == 0)
    r.error("kgpu.health.recovery.probeIntervalMs",
            "kgpu.health.recovery.probeIntervalMs must be at least 1 when recovery is enabled");
  check_dra(c, r);
}

}  // namespace kgpu::config_detail
