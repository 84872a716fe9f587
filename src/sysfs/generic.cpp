// Generic device groups: operator-declared device files served like GPUs (RDMA, FPGA, ...).
#include <set>

#include "sysfs/backends.h"
#include "sysfs/fs_util.h"

namespace kgpu {
namespace {

// The text the pattern's first '*' matched in `path` ("/dev/fpga*-mgmt" vs "/dev/fpga3-mgmt" -> "3").
std::optional<std::string> star_capture(const std::string& pattern, const std::string& path) {
  size_t star = pattern.find('*');
  if (star == std::string::npos) return std::string();
  const std::string prefix = pattern.substr(0, star), suffix = pattern.substr(star + 1);
  if (suffix.find_first_of("*?[") != std::string::npos) {
    // Later wildcards: capture up to the next '/' (the '*' is within one component).
    size_t end = path.find('/', prefix.size());
    return path.substr(prefix.size(), end == std::string::npos ? std::string::npos : end - prefix.size());
  }
  if (path.size() < prefix.size() + suffix.size() || path.compare(0, prefix.size(), prefix) != 0 ||
      path.compare(path.size() - suffix.size(), suffix.size(), suffix) != 0)
    return std::nullopt;
  return path.substr(prefix.size(), path.size() - prefix.size() - suffix.size());
}

std::string substitute(const std::string& pattern, const std::string& capture) {
  std::string out = pattern;
  size_t star = out.find('*');
  if (star != std::string::npos) out.replace(star, 1, capture);
  return out;
}

std::string basename_of(const std::string& p) {
  size_t slash = p.rfind('/');
  return slash == std::string::npos ? p : p.substr(slash + 1);
}

}  // namespace

Result<Inventory> discover_generic(const std::vector<GenericDeviceGroup>& groups, const SysfsRoots& roots) {
  Inventory inv;
  std::set<std::string> claimed;  // device files already owned by an earlier group
  std::set<std::string> ids;
  for (size_t gi = 0; gi < groups.size(); ++gi) {
    const auto& group = groups[gi];
    const std::string who = "device group " + group.resource;
    if (group.devices.empty()) {
      inv.warnings.push_back(who + ": no device patterns; group skipped");
      continue;
    }
    bool shared_ok = true;
    for (const auto& s : group.shared_devices)
      if (!sysfs::exists(sysfs::join(roots.dev, s))) {
        inv.warnings.push_back(who + ": shared device node " + sysfs::join(roots.dev, s) + " is missing; group skipped");
        shared_ok = false;
      }
    if (!shared_ok) continue;
    for (const auto& primary : sysfs::glob(roots.dev, group.devices.front())) {
      if (claimed.count(primary)) {
        inv.warnings.push_back(who + ": " + sysfs::join(roots.dev, primary) +
                               " already belongs to an earlier group; skipped");
        continue;
      }
      Gpu g;
      g.vendor = Vendor::Generic;
      g.device_nodes.push_back({primary});
      auto capture = star_capture(group.devices.front(), primary);
      bool complete = true;
      for (size_t k = 1; k < group.devices.size(); ++k) {
        const std::string companion = substitute(group.devices[k], capture.value_or(""));
        if (!sysfs::exists(sysfs::join(roots.dev, companion))) {
          inv.warnings.push_back(who + ": " + sysfs::join(roots.dev, primary) + " has no companion " +
                                 sysfs::join(roots.dev, companion) + "; device skipped");
          complete = false;
          break;
        }
        g.device_nodes.push_back({companion});
      }
      if (!complete) continue;
      bool matches = true;
      for (const auto& m : group.sysfs_matches) {
        const std::string file = sysfs::join(roots.sys, substitute(m.path, capture.value_or("")));
        auto value = sysfs::read_trimmed(file);
        if (!value) {
          inv.warnings.push_back(who + ": cannot read " + file + " to match " + sysfs::join(roots.dev, primary) +
                                 "; device skipped");
        }
        if (!value || *value != m.equals) {
          matches = false;  // a different device (e.g. another vendor's NIC): not this group's
          break;
        }
      }
      if (!matches) continue;
      // The kubelet ID: the primary node's file name ("uverbs0"), made unique across groups.
      std::string id = basename_of(primary);
      if (ids.count(id)) id = std::to_string(gi) + "-" + id;
      ids.insert(id);
      claimed.insert(primary);
      g.uuid = id;
      g.product = group.resource;
      g.attributes["resource"] = group.resource;
      g.attributes["group-index"] = std::to_string(gi);
      g.index = static_cast<int>(inv.gpus.size());
      inv.gpus.push_back(std::move(g));
    }
  }
  return inv;
}

}  // namespace kgpu
