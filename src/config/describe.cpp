// `kgpu plugin --print-config`: the effective value of every setting and where it came from, so an
// operator can see at a glance that a Helm env var overrides the ConfigMap.
#include <sstream>

#include "config/accepted_keys.h"
#include "config/loader.h"
#include "config/settings.h"

namespace kgpu {
namespace {

std::string describe_selector(const DeviceSelector& d) {
  if (std::holds_alternative<DeviceSelector::All>(d.value)) return "all";
  if (const int* count = std::get_if<int>(&d.value)) return std::to_string(*count);
  return "[" + config_detail::join(std::get<std::vector<std::string>>(d.value), ", ") + "]";
}

std::string describe_replicated(const ReplicatedResources& r) {
  std::string out = "{renameByDefault: ";
  out += r.rename_by_default ? "true" : "false";
  out += ", failRequestsGreaterThanOne: ";
  out += r.fail_requests_greater_than_one ? (*r.fail_requests_greater_than_one ? "true" : "false") : "unset";
  out += ", resources: [";
  for (size_t i = 0; i < r.resources.size(); ++i) {
    const auto& res = r.resources[i];
    if (i) out += ", ";
    out += "{name: " + res.name;
    if (!res.rename.empty()) out += ", rename: " + res.rename;
    out += ", replicas: " + std::to_string(res.replicas) + ", devices: " + describe_selector(res.devices) + "}";
  }
  return out + "]}";
}

std::string describe_patterns(const std::vector<ResourcePattern>& patterns) {
  if (patterns.empty()) return "[] (defaults)";
  std::vector<std::string> parts;
  for (const auto& p : patterns) parts.push_back("{pattern: \"" + p.pattern + "\", name: " + p.name + "}");
  return "[" + config_detail::join(parts, ", ") + "]";
}

}  // namespace

std::string describe_effective_config(const LoadedConfig& loaded) {
  const Config& c = loaded.config;
  std::vector<std::pair<std::string, std::string>> rows;
  for (const auto& s : config_detail::settings()) rows.emplace_back(s.key, s.show(c));
  rows.emplace_back("resources.gpus", describe_patterns(c.gpu_resources));
  rows.emplace_back("resources.mig", describe_patterns(c.mig_resources));
  rows.emplace_back("sharing.timeSlicing", c.time_slicing.resources.empty()
                                               ? std::string("none")
                                               : describe_replicated(c.time_slicing));
  rows.emplace_back("sharing.mps", c.mps ? describe_replicated(*c.mps) : std::string("none"));
  std::vector<std::string> groups;
  for (const auto& g : c.device_groups) groups.push_back(g.resource);
  rows.emplace_back("kgpu.deviceGroups", "[" + config_detail::join(groups, ", ") + "]");

  size_t width = 0;
  for (const auto& [key, value] : rows) width = std::max(width, key.size());
  std::ostringstream out;
  for (const auto& [key, value] : rows) {
    auto origin = loaded.origins.find(key);
    out << key << std::string(width - key.size() + 1, ' ') << "= " << value << "  ("
        << (origin == loaded.origins.end() ? "default" : origin->second) << ")\n";
  }
  return out.str();
}

std::vector<std::string> describe_compatibility_only(const LoadedConfig& loaded) {
  std::vector<std::string> out;
  static const Config* const defaults = new Config();  // what an unset setting shows
  for (const auto& accepted : accepted_keys()) {
    if (accepted.effect != KeyEffect::CompatibilityOnly) continue;
    const auto origin = loaded.origins.find(std::string(accepted.key));
    if (origin == loaded.origins.end() || origin->second == "default") continue;
    for (const auto& s : config_detail::settings()) {
      if (s.key != accepted.key) continue;
      const std::string value = s.show(loaded.config);
      if (value == s.show(*defaults)) break;
      out.push_back(std::string(accepted.key) + " = " + value + " (" + origin->second +
                    ") has no effect in kgpu: " + std::string(accepted.what));
    }
  }
  return out;
}

}  // namespace kgpu
