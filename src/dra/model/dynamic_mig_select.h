#pragma once
// Which GPUs kgpu.dra.mig.dynamic turns into dynamic MIG layouts (issue 42; docs/dynamic-mig.md), by
// NVIDIA's rules and kgpu's stricter one on instances it did not create. Pure: what NVML says of
// each GPU's profiles comes in, read by nvml/dynamic_mig_facts.h.
//   Hopper and later: dynamic whatever the MIG mode (full GPU + every placement): MIG mode changes
//     there without a reset.
//   Ampere with MIG on: the placements only (leaving MIG mode for the whole GPU needs a reset).
//   Ampere with MIG off, a GPU that is not MIG-capable, or NVML not answering the profile calls:
//     not dynamic, published as without the key, with a warning naming the GPU and why.
//   A GPU holding a MIG instance kgpu did not create (an operator's, the MIG manager's): not
//     dynamic, published as today (its static MIG devices), with a warning: kgpu never destroys or
//     places around what it did not make. Instances kgpu created are no static devices: the
//     placement device at their position stands for them.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/inventory.h"
#include "dra/model/dynamic_mig.h"

namespace kgpu::dra {

// What NVML answered for one GPU's GPU-instance profiles.
struct DynamicMigProbe {
  std::vector<MigProfileFacts> profiles;  // every profile NVML offers, with its placements
  std::string problem;                    // non-empty: the calls failed or are missing (why)
};

struct DynamicMigSelection {
  std::vector<DynamicMigGpuFacts> gpus;  // in inventory order
  // One per named GPU that is not dynamic, naming it and why; entries that name no GPU too.
  std::vector<std::string> warnings;
};

// Whether kgpu.dra.mig.dynamic (`entries`: ["all"] or GPU indexes / UUIDs) names `gpu`.
bool dynamic_mig_named(const std::vector<std::string>& entries, const Gpu& gpu);

// `probes`: by GPU uuid, for the GPUs named (a named GPU without one counts as NVML not answering).
// `kgpu_created`: the MIG uuids of the instances kgpu made for prepared claims (the claim store's).
DynamicMigSelection select_dynamic_mig(const Inventory& inventory, const std::vector<std::string>& entries,
                                       const std::map<std::string, DynamicMigProbe>& probes,
                                       const std::set<std::string>& kgpu_created);

// The layouts of a selection (dynamic_mig_layout of each GPU).
std::vector<DynamicMigLayout> dynamic_mig_layouts(const DynamicMigSelection& selection);

}  // namespace kgpu::dra
