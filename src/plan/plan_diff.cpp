#include "plan/plan_diff.h"

#include <algorithm>
#include <map>

namespace kgpu {

namespace {

bool same_except_health(const Resource& a, const Resource& b) {
  if (a.name != b.name || a.vendor != b.vendor || a.sharing != b.sharing || a.replicas != b.replicas ||
      a.fail_requests_greater_than_one != b.fail_requests_greater_than_one || a.devices.size() != b.devices.size())
    return false;
  for (size_t i = 0; i < a.devices.size(); ++i) {
    const auto& x = a.devices[i];
    const auto& y = b.devices[i];
    if (x.id != y.id || x.numa_nodes != y.numa_nodes || x.gpu != y.gpu || x.mig != y.mig || x.replica != y.replica)
      return false;
  }
  return true;
}

}  // namespace

PlanDiff diff_plans(const ResourcePlan& before, const ResourcePlan& after) {
  std::map<std::string_view, const Resource*> old_by_name, new_by_name;
  for (const auto& r : before.resources) old_by_name.emplace(r.name, &r);
  for (const auto& r : after.resources) new_by_name.emplace(r.name, &r);
  PlanDiff d;
  for (const auto& [name, r] : old_by_name)
    if (!new_by_name.contains(name)) d.removed.emplace_back(name);
  for (const auto& [name, r] : new_by_name) {
    const auto it = old_by_name.find(name);
    if (it == old_by_name.end()) {
      d.added.emplace_back(name);
    } else if (*it->second == *r) {
      d.unchanged.emplace_back(name);
    } else {
      d.changed.emplace_back(name);
      if (same_except_health(*it->second, *r)) d.health_only.emplace_back(name);
    }
  }
  return d;
}

}  // namespace kgpu
