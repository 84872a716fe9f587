#include "mps/readiness.h"

#include <sys/stat.h>

#include "plan/mps_paths.h"

namespace kgpu {

bool mps_ready(const Config& config, const Resource& resource) {
  if (resource.sharing != SharingKind::Mps) return true;
  struct stat st {};
  return ::stat(mps_ready_marker(config.mps_root, resource.name).c_str(), &st) == 0;
}

ResourcePlan withhold_unready_mps(ResourcePlan plan, const std::function<bool(const Resource&)>& ready) {
  std::erase_if(plan.resources, [&](const Resource& r) {
    if (r.sharing != SharingKind::Mps || ready(r)) return false;
    plan.problems.push_back("Resource " + r.name +
                            " is withheld until its MPS control daemon is ready (see `kgpu mps-daemon`).");
    return true;
  });
  return plan;
}

}  // namespace kgpu
