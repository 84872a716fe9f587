#pragma once
// Time-slicing and MPS: replicate the devices of base resources as "<id>::<n>".
// Applied to the base resources after the MIG strategy, so MIG resources can be time-sliced too.
#include <string>
#include <vector>

#include "plan/plan_builder.h"

namespace kgpu::planner {

// The entries of both sharing blocks apply (MPS first). A base resource is shared by at most one
// entry: a second entry naming it is ignored with a problem. Entries naming a resource the node does
// not have are skipped silently (one config usually serves a whole, heterogeneous cluster).
void apply_sharing(const Config& config, const Inventory& inventory, ResourceMap& resources,
                   std::vector<std::string>& problems);

// The largest number of MPS clients a GPU supports (48 from compute capability 7.5, else 16).
int mps_max_clients(const Gpu& gpu);

}  // namespace kgpu::planner
