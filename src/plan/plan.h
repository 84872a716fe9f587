#pragma once
// plan(): the pure heart of the daemon. Config × Inventory → ResourcePlan: which resources the node
// advertises, under which names, with which device IDs (replicas, MIG), health and NUMA affinity.
//
// It is total: it never fails and never throws. Anything it cannot serve safely (an invalid `single`
// MIG layout, MPS on MIG devices, a sharing selector naming a missing GPU) is left out or served
// unshared, and a full sentence saying what and why goes to ResourcePlan::problems.
//
// Rules (see plan.cpp for the details and the reasons):
//  - names: NVIDIA "nvidia.com/gpu" (or config resources.gpus by product name), AMD "amd.com/gpu",
//    Intel "gpu.intel.com/<attributes[driver]>", Generic attributes["resource"];
//  - MIG: none / single / mixed as NVIDIA's plugin, `mixed` names every profile incl. sub-slices
//    "nvidia.com/mig-<profile, '+' → '.'>"; config resources.mig patterns (anchored '*') first;
//  - sharing: time-slicing and MPS replicas "<id>::<n>", rename / renameByDefault, devices selectors;
//  - order: resources sorted by name, devices in inventory order (replicas of one device adjacent).
#include "config/config.h"
#include "core/inventory.h"
#include "core/resource_plan.h"

namespace kgpu {

ResourcePlan plan(const Config& config, const Inventory& inventory);

}  // namespace kgpu
