#pragma once
// Which API serves which GPU when kgpu runs as a DRA driver next to the device-plugin API
// (kgpu.dra.gpus): a GPU is never handed out by both. Pure.
#include <string>
#include <vector>

#include "core/inventory.h"
#include "core/resource_plan.h"

namespace kgpu::dra {

struct DraShare {
  std::vector<bool> owned;             // per inventory.gpus position: DRA serves it
  std::vector<std::string> unmatched;  // kgpu.dra.gpus entries that name no NVIDIA GPU of the node
};

// The NVIDIA GPUs DRA owns: every one when `selection` is empty, else those whose index or UUID a
// selection entry names. An entry that names no GPU (a typo, or a GPU that fell off the bus) is
// reported in `unmatched` and the other entries still apply: the GPUs they name stay with DRA
// whatever happens to the list's other entries. AMD and Intel GPUs stay with the device-plugin API
// (kgpu's DRA driver serves the NVIDIA driver name only).
DraShare dra_share(const Inventory& inventory, const std::vector<std::string>& selection);

// The device-plugin share: `plan` without the devices of owned GPUs; a resource left without
// devices goes too (one that never had any, such as a device group, stays).
ResourcePlan without_owned(ResourcePlan plan, const std::vector<bool>& owned);

}  // namespace kgpu::dra
