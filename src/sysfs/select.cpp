// Backend selection and the combined sysfs discovery entry point.
#include <set>

#include "sysfs/backends.h"
#include "sysfs/fs_util.h"

namespace kgpu {

bool nvidia_present(const SysfsRoots& roots) {
  return sysfs::is_dir(sysfs::join(roots.sys, "/module/nvidia")) ||
         sysfs::is_dir(sysfs::join(roots.sys, "/bus/pci/drivers/nvidia"));
}

SysfsRoots roots_from(const Config& config) { return SysfsRoots{config.sysfs_root, config.dev_root()}; }

NodeFacts probe_node(const Config& config) {
  const SysfsRoots roots = roots_from(config);
  return NodeFacts{nvidia_present(roots), amd_present(roots), intel_present(roots), !config.device_groups.empty()};
}

Result<BackendChoice> choose_backends(const std::vector<std::string>& configured, const NodeFacts& facts) {
  BackendChoice on, off;
  bool any_positive = false;
  bool auto_mode = configured.empty();
  for (const auto& raw : configured) {
    const bool negate = !raw.empty() && raw.front() == '-';
    const std::string name = negate ? raw.substr(1) : raw;
    BackendChoice& target = negate ? off : on;
    if (name == "auto" && !negate) {
      auto_mode = true;
      continue;
    }
    if (name == "nvidia") target.nvidia = true;
    else if (name == "amd") target.amd = true;
    else if (name == "intel") target.intel = true;
    else if (name == "generic") target.generic = true;
    else
      return Error::invalid("unknown backend \"" + raw + "\" (expected auto, nvidia, amd, intel, generic, or -name)");
    if (!negate) any_positive = true;
  }
  // Only negations ("-intel") mean "auto, except ...".
  if (!any_positive) auto_mode = true;
  BackendChoice out = on;
  if (auto_mode) {
    out.nvidia = out.nvidia || facts.nvidia;
    out.amd = out.amd || facts.amd;
    out.intel = out.intel || facts.intel;
    out.generic = out.generic || facts.device_groups;
  }
  out.nvidia = out.nvidia && !off.nvidia;
  out.amd = out.amd && !off.amd;
  out.intel = out.intel && !off.intel;
  out.generic = out.generic && !off.generic;
  return out;
}

Inventory discover_sysfs_backends(const Config& config, const BackendChoice& choice) {
  const SysfsRoots roots = roots_from(config);
  std::vector<Inventory> parts;
  std::vector<std::string> warnings;
  auto run = [&](const char* name, Result<Inventory> r) {
    if (r.ok()) {
      parts.push_back(std::move(r).value());
    } else {
      warnings.push_back(std::string(name) + " backend failed: " + r.error().message);
    }
  };
  if (choice.amd) run("AMD", discover_amd(roots));
  if (choice.intel) run("Intel", discover_intel(roots));
  if (choice.generic) run("generic", discover_generic(config.device_groups, roots));
  Inventory merged = merge(std::move(parts));
  for (auto& w : warnings) merged.warnings.push_back(std::move(w));
  for (size_t i = 0; i < merged.gpus.size(); ++i) merged.gpus[i].index = static_cast<int>(i);
  return merged;
}

Inventory discover_sysfs_backends(const Config& config) {
  auto choice = choose_backends(config.backends, probe_node(config));
  if (!choice) {
    Inventory inv;
    inv.warnings.push_back("backend selection: " + choice.error().message);
    return inv;
  }
  return discover_sysfs_backends(config, *choice);
}

}  // namespace kgpu

namespace kgpu {

std::vector<std::string> rescan_watch_dirs(const Config& config, const BackendChoice& choice) {
  std::set<std::string> dirs;
  const std::string dev = config.dev_root();
  if (choice.amd || choice.intel) dirs.insert(sysfs::join(dev, "/dev/dri"));
  if (choice.generic)
    for (const auto& g : config.device_groups)
      for (const auto& pattern : g.devices) {
        // The deepest directory before any wildcard: "/dev/infiniband/uverbs*" -> "/dev/infiniband".
        const size_t wild = pattern.find_first_of("*?[");
        const size_t slash = pattern.rfind('/', wild == std::string::npos ? pattern.size() : wild);
        dirs.insert(sysfs::join(dev, slash == 0 || slash == std::string::npos ? "/" : pattern.substr(0, slash)));
      }
  return {dirs.begin(), dirs.end()};
}

}  // namespace kgpu
