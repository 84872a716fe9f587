#pragma once
// Which entities a scrape reads, derived from the daemon's Inventory (pure): every NVIDIA GPU, and
// for a MIG-enabled GPU also each of its GPU instances (DCGM's GPU_I entities), with the device IDs
// the plugin may have handed out for each.
#include <vector>

#include "core/inventory.h"
#include "telemetry/sample.h"

namespace kgpu::telemetry {

std::vector<Target> targets_from_inventory(const Inventory& inventory);

// DCGM's GPU_I_PROFILE is the GPU-instance profile: "1c.3g.20gb" (a compute instance of part of
// the instance) -> "3g.20gb".
std::string gpu_instance_profile(const std::string& mig_profile);

}  // namespace kgpu::telemetry
