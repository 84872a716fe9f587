#pragma once
// diff_plans(): what changed between two plans, so the daemon keeps unchanged endpoints, pushes a
// ListAndWatch update for changed ones, starts added ones and stops removed ones. Pure.
#include <string>
#include <vector>

#include "core/resource_plan.h"

namespace kgpu {

struct PlanDiff {
  std::vector<std::string> added;      // resource names only in `after` (sorted)
  std::vector<std::string> removed;    // only in `before` (sorted)
  std::vector<std::string> changed;    // in both, but devices (IDs, health, NUMA, backing) or sharing settings differ
  std::vector<std::string> health_only;  // subset of `changed`: only device health differs
  std::vector<std::string> unchanged;  // in both and equal
  bool empty() const { return added.empty() && removed.empty() && changed.empty(); }
  bool operator==(const PlanDiff&) const = default;
};

PlanDiff diff_plans(const ResourcePlan& before, const ResourcePlan& after);

}  // namespace kgpu
