#pragma once
// The plugin's side of MPS: an MPS resource is advertised only once `kgpu mps-daemon` has its
// control daemon running with the limits set (the readiness marker exists).
#include <functional>
#include <string>

#include "config/config.h"
#include "core/resource_plan.h"

namespace kgpu {

// True when `resource` is not MPS-shared, or its readiness marker <mpsRoot>/<resource>/.ready is
// live (see mps_marker_live).
bool mps_ready(const Config& config, const Resource& resource);

// Why an MPS resource is not ready, for /readyz and `kgpu devices --live`: "waiting for the MPS
// control daemon (`kgpu mps-daemon` has not marked <marker> ready)".
std::string mps_waiting_reason(const Config& config, const Resource& resource);

// True when the marker at `path` exists and a live `kgpu mps-daemon` holds its flock: a marker
// left by a supervisor that was killed (SIGKILL leaves no time to remove it) is not locked by
// anyone, so it does not count.
bool mps_marker_live(const std::string& path);

// Pure: the plan without the MPS resources for which ready() is false; each withheld resource adds a
// problem sentence. Non-MPS resources are never withheld.
ResourcePlan withhold_unready_mps(ResourcePlan plan, const std::function<bool(const Resource&)>& ready);

}  // namespace kgpu
