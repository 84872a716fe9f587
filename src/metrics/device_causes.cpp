#include "metrics/device_causes.h"

#include <map>
#include <string>

namespace kgpu {
namespace {

constexpr std::string_view kSeries = "kgpu_device_unhealthy{";

// One label value after its opening quote, escapes undone (\\, \" and \n, as Prometheus writes
// them). Advances `at` past the closing quote; nullopt when the value does not end on this line.
std::optional<std::string> quoted(std::string_view line, size_t& at) {
  std::string value;
  while (at < line.size()) {
    const char c = line[at++];
    if (c == '"') return value;
    if (c != '\\') {
      value += c;
      continue;
    }
    if (at >= line.size()) return std::nullopt;
    const char e = line[at++];
    if (e == 'n') value += '\n';
    else if (e == '\\' || e == '"') value += e;
    else return std::nullopt;
  }
  return std::nullopt;
}

// The labels of `line` (which starts with kSeries), or nullopt when malformed.
std::optional<std::map<std::string, std::string>> labels(std::string_view line) {
  std::map<std::string, std::string> out;
  size_t at = kSeries.size();
  while (at < line.size() && line[at] != '}') {
    const size_t eq = line.find("=\"", at);
    if (eq == std::string_view::npos || eq == at) return std::nullopt;
    std::string key(line.substr(at, eq - at));
    at = eq + 2;
    auto value = quoted(line, at);
    if (!value) return std::nullopt;
    out[key] = std::move(*value);
    if (at < line.size() && line[at] == ',') ++at;
  }
  if (at >= line.size()) return std::nullopt;  // no closing brace
  return out;
}

}  // namespace

Result<std::vector<DeviceCause>> parse_device_causes(std::string_view exposition) {
  std::vector<DeviceCause> causes;
  size_t line_no = 0;
  while (!exposition.empty()) {
    const size_t nl = exposition.find('\n');
    const std::string_view line = exposition.substr(0, nl);
    exposition = nl == std::string_view::npos ? std::string_view() : exposition.substr(nl + 1);
    ++line_no;
    if (!line.starts_with(kSeries)) continue;
    auto l = labels(line);
    if (!l || !l->count("resource") || !l->count("device") || !l->count("reason"))
      return Error::invalid("line " + std::to_string(line_no) + " of /metrics: a malformed kgpu_device_unhealthy series");
    causes.push_back({(*l)["resource"], (*l)["device"], (*l)["reason"]});
  }
  return causes;
}

}  // namespace kgpu
