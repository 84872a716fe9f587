#pragma once
// Internal to the planner: the resources being built, keyed (and so sorted) by name, and helpers
// that turn inventory devices into advertised devices.
#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/inventory.h"
#include "core/resource_plan.h"

namespace kgpu::planner {

using ResourceMap = std::map<std::string, Resource>;

AdvertisedDevice gpu_device(const Inventory& inventory, size_t gpu);
AdvertisedDevice mig_device(const Inventory& inventory, size_t gpu, size_t mig);

// Appends `device` to the resource `name`, creating it (unshared, vendor `vendor`) when new.
void add_device(ResourceMap& resources, const std::string& name, Vendor vendor, AdvertisedDevice device);

// Human form of a GPU for problem sentences: "GPU 3 (GPU-abc…)".
std::string describe_gpu(const Gpu& gpu);

}  // namespace kgpu::planner
