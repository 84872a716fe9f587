#pragma once
// Dynamic MIG layouts (dra/model/dynamic_mig.h) as resource.k8s.io/v1 ResourceSlices of one pool,
// in the counter layout the API server's version needs, as NVIDIA's driver chooses it:
//   Combined (< 1.35): each slice holds counter sets and the devices consuming them; one GPU per
//     slice, as a 1.34 slice may sum at most 32 shared counters (a GPU's set has 15).
//   Split (>= 1.35): counter sets in slices of their own (at most 8 sets and 32 counters summed
//     each, kgpu keeping the tightest limits of both versions), then one devices-only slice per GPU.
// Every slice is within slice_limit_violations' limits. Pure.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dra/model/dynamic_mig.h"

namespace kgpu::dra {

enum class CounterLayout { Combined, Split };

// NVIDIA's choice by the API server's version: separate counter slices from 1.35 on.
CounterLayout counter_layout_for(int server_major, int server_minor);

struct DynamicMigSliceOptions {
  std::string driver = "gpu.nvidia.com";
  std::string node_name;
  int64_t generation = 1;
  CounterLayout layout = CounterLayout::Combined;
  // Attributes every device of a GPU carries besides its own (product, versions, PCI), by GPU
  // uuid, as resource.k8s.io attribute objects ({"string": ...}); optional.
  nlohmann::json gpu_attributes = nlohmann::json::object();
};

std::vector<nlohmann::json> dynamic_mig_slices(const std::vector<DynamicMigLayout>& gpus,
                                               const DynamicMigSliceOptions& options);

}  // namespace kgpu::dra
