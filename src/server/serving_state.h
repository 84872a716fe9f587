#pragma once
// The immutable snapshot every server reads: the config, inventory and plan of one moment, plus
// the topology scorer of that inventory (built once per snapshot so GetPreferredAllocation costs
// microseconds). A new moment is a new snapshot swapped in whole; readers keep theirs alive.
#include <memory>

#include "alloc/preferred.h"
#include "config/config.h"
#include "core/inventory.h"
#include "core/resource_plan.h"

namespace kgpu::server {

struct ServingState {
  Config config;
  Inventory inventory;
  ResourcePlan plan;
  TopologyScorer scorer;

  ServingState(Config c, Inventory i, ResourcePlan p)
      : config(std::move(c)), inventory(std::move(i)), plan(std::move(p)), scorer(inventory) {}
};

using StatePtr = std::shared_ptr<const ServingState>;

}  // namespace kgpu::server
