#include "config/xid_policy.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <map>

#include <fmt/format.h>

namespace kgpu {

namespace {

// Meanings from NVIDIA's XID catalogue, shortened for log lines.
const std::map<uint64_t, const char*>& xid_table() {
  static const std::map<uint64_t, const char*> table = {
      {8, "GPU stopped processing (command timeout)"},
      {13, "graphics engine exception (application error)"},
      {31, "GPU memory page fault (application error)"},
      {32, "invalid or corrupted push buffer stream"},
      {38, "driver firmware error"},
      {43, "GPU stopped processing (application error)"},
      {45, "preemptive cleanup, due to previous errors"},
      {48, "double-bit ECC error"},
      {56, "display engine error"},
      {57, "error programming video memory interface"},
      {58, "unstable video memory interface detected"},
      {61, "internal micro-controller breakpoint/warning"},
      {62, "internal micro-controller halt"},
      {63, "ECC page retirement or row remapping recorded"},
      {64, "ECC page retirement or row remapping recording failure"},
      {68, "video processor exception"},
      {69, "graphics engine class error"},
      {74, "NVLink error"},
      {79, "GPU has fallen off the bus"},
      {92, "high single-bit ECC error rate"},
      {94, "contained ECC error"},
      {95, "uncontained ECC error"},
      {109, "context switch timeout"},
      {119, "GSP RPC timeout"},
      {120, "GSP error"},
      {121, "C2C link corrected error"},
      {123, "SPI PMU RPC write failure"},
      {140, "unrecovered ECC error"},
      {143, "GPU initialisation failure"},
      {154, "GPU recovery action changed"},
  };
  return table;
}

std::string lower(std::string s) {
  for (auto& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  size_t e = s.find_last_not_of(" \t\r\n");
  return s.substr(b, e - b + 1);
}

std::vector<std::string> split_list(const std::string& value) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= value.size()) {
    size_t comma = value.find(',', start);
    if (comma == std::string::npos) comma = value.size();
    std::string item = trim(value.substr(start, comma - start));
    if (!item.empty()) out.push_back(lower(item));
    start = comma + 1;
  }
  return out;
}

std::optional<uint64_t> parse_xid(const std::string& s) {
  uint64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end != s.data() + s.size()) return std::nullopt;
  return v;
}

bool contains(const std::vector<uint64_t>& v, uint64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

XidAction default_action(uint64_t xid) {
  return contains(fatal_xids(), xid) ? XidAction::MarkUnhealthyUntilReset : XidAction::MarkUnhealthy;
}

}  // namespace

const std::vector<uint64_t>& fatal_xids() {
  static const std::vector<uint64_t> fatal = {48, 62, 64, 79, 94, 95, 119, 120, 140};
  return fatal;
}

XidAction xid_action(const HealthConfig& config, uint64_t xid) {
  if (!config.enabled) return XidAction::Ignore;
  if (auto it = config.xid_actions.find(xid); it != config.xid_actions.end()) return it->second;
  if (!config.xids_enabled) return XidAction::Ignore;
  if (contains(config.ignored_xids, xid)) return XidAction::Ignore;
  return default_action(xid);
}

XidAction ecc_double_bit_action(const HealthConfig& config) {
  // Double-bit ECC errors mean corrupted memory contents: like XID 48, they need a reset.
  return config.enabled ? XidAction::MarkUnhealthyUntilReset : XidAction::Ignore;
}

std::string xid_meaning(uint64_t xid) {
  auto it = xid_table().find(xid);
  return it == xid_table().end() ? "unknown XID" : it->second;
}

std::string describe_xid(uint64_t xid) { return fmt::format("XID {} ({})", xid, xid_meaning(xid)); }

HealthEnvResult apply_health_env(HealthConfig base, const std::optional<std::string>& disable,
                                 const std::optional<std::string>& enable) {
  HealthEnvResult out{std::move(base), {}};
  HealthConfig& c = out.config;

  if (disable) {
    for (const auto& item : split_list(*disable)) {
      if (item == "all") {
        c.enabled = false;
      } else if (item == "xids") {
        // The environment outranks the config file: per-XID actions that mark devices go too, so
        // "xids" means no XID marks anything unless DP_ENABLE_HEALTHCHECKS names it.
        c.xids_enabled = false;
        std::erase_if(c.xid_actions, [](const auto& kv) { return kv.second != XidAction::Ignore; });
      } else if (auto xid = parse_xid(item)) {
        if (!contains(c.ignored_xids, *xid)) c.ignored_xids.push_back(*xid);
      } else {
        out.warnings.push_back(fmt::format("DP_DISABLE_HEALTHCHECKS: '{}' is neither 'all', 'xids' nor an XID "
                                           "number; skipped", item));
      }
    }
  }

  if (enable) {
    for (const auto& item : split_list(*enable)) {
      if (item == "all" || item == "xids") {
        c.xids_enabled = true;
        c.ignored_xids.clear();
      } else if (auto xid = parse_xid(item)) {
        c.ignored_xids.erase(std::remove(c.ignored_xids.begin(), c.ignored_xids.end(), *xid), c.ignored_xids.end());
        // With XID checks off, an explicit action is what makes this one XID count again; an
        // operator's own action for it (config file) stays as written.
        if (!c.xids_enabled && !c.xid_actions.count(*xid)) c.xid_actions[*xid] = default_action(*xid);
      } else {
        out.warnings.push_back(
            fmt::format("DP_ENABLE_HEALTHCHECKS: '{}' is neither 'all', 'xids' nor an XID number; skipped", item));
      }
    }
  }
  return out;
}

}  // namespace kgpu
