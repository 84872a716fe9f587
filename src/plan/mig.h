#pragma once
// MIG strategies for NVIDIA GPUs: which whole GPUs and MIG devices become which base (unshared)
// resources. See mig.cpp for the `single` repair rule.
#include <string>
#include <vector>

#include "plan/plan_builder.h"

namespace kgpu::planner {

void add_nvidia_resources(const Config& config, const Inventory& inventory, ResourceMap& resources,
                          std::vector<std::string>& problems);

}  // namespace kgpu::planner
