#pragma once
// Per-resource labels (R.count, R.product, MIG attributes ...) for each MIG strategy. Internal to
// src/labels; node_labels() adds them to the node-level ones.
#include "labels/labels.h"

namespace kgpu::labels {

void add_gpu_resource_labels(const Config& config, const Inventory& inventory, const ResourcePlan& plan,
                             Labels& out);

}  // namespace kgpu::labels
