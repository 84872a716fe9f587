#pragma once
// Which API serves which GPU when kgpu runs as a DRA driver next to the device-plugin API
// (kgpu.dra.gpus): a GPU is never handed out by both. Pure.
#include <string>
#include <vector>

#include "config/config.h"
#include "core/inventory.h"
#include "core/resource_plan.h"
#include "dra/slice_builder.h"

namespace kgpu::dra {

struct DraShare {
  std::vector<bool> owned;             // per inventory.gpus position: DRA serves it
  std::vector<std::string> unmatched;  // kgpu.dra.gpus entries that name no NVIDIA GPU of the node
};

// The GPUs DRA owns under `dra` (kgpu.dra.*): of the vendors in dra.vendors, every AMD and Intel
// GPU, and the NVIDIA GPUs dra.gpus names by index or UUID (every one when it is empty). An entry
// that names no GPU (a typo, or a GPU that fell off the bus) is reported in `unmatched` and the
// other entries still apply. Generic devices (device groups) always stay with the device-plugin API.
DraShare dra_share(const Inventory& inventory, const DraConfig& dra);

// The driver names of kgpu.dra.* (driver, amdDriver, intelDriver), and those of them it serves
// (kgpu.dra.vendors), in the order NVIDIA, AMD, Intel.
DriverNames driver_names(const DraConfig& dra);
std::vector<std::string> served_drivers(const DraConfig& dra);

// What DRA publishes of `pools` (build_publication's): the pools of served drivers, each with only
// the devices of owned GPUs (a MIG device follows its GPU).
std::vector<DriverPool> served_pools(std::vector<DriverPool> pools, const Inventory& inventory, const DraConfig& dra,
                                     const std::vector<bool>& owned);

// The device-plugin share: `plan` without the devices of owned GPUs; a resource left without
// devices goes too (one that never had any, such as a device group, stays).
ResourcePlan without_owned(ResourcePlan plan, const std::vector<bool>& owned);

}  // namespace kgpu::dra
