#pragma once
// The plugin's side of MPS: an MPS resource is advertised only once `kgpu mps-daemon` has its
// control daemon running with the limits set (the readiness marker exists).
#include <functional>

#include "config/config.h"
#include "core/resource_plan.h"

namespace kgpu {

// True when `resource` is not MPS-shared, or its readiness marker <mpsRoot>/<resource>/.ready exists.
bool mps_ready(const Config& config, const Resource& resource);

// Pure: the plan without the MPS resources for which ready() is false; each withheld resource adds a
// problem sentence. Non-MPS resources are never withheld.
ResourcePlan withhold_unready_mps(ResourcePlan plan, const std::function<bool(const Resource&)>& ready);

}  // namespace kgpu
