#pragma once
// Which API serves which GPU when kgpu runs as a DRA driver next to the device-plugin API
// (kgpu.dra.gpus): a GPU is never handed out by both. Pure.
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/inventory.h"
#include "core/resource_plan.h"
#include "dra/model/publication.h"
#include "dra/sharing/prepare.h"
#include "podresources/client.h"

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

// Something that holds a GPU now (Inventory::gpus position), whatever the config says: a claim
// prepared on it (DRA) or a pod the kubelet gave one of its device-plugin IDs.
struct GpuHold {
  size_t gpu = 0;
  std::string holder;  // "claim team-a/train (7c0a...)", "pod default/trainer (nvidia.com/gpu GPU-...)"
  bool operator==(const GpuHold&) const = default;
};

// Who serves each GPU once holds are honoured (issue 28, item 1): a GPU a prepared claim holds
// stays DRA's and one a pod holds stays the device-plugin API's until released, whatever
// kgpu.dra.gpus says since the split changed. Held by both (handed out twice before kgpu knew):
// the config decides, and the conflict is reported.
struct ApiOwners {
  std::vector<bool> owned;  // per inventory.gpus position: DRA serves it
  // One sentence per GPU whose owner is not the config's, naming both owners; sorted.
  std::vector<std::string> overrides;
};
ApiOwners api_owners(const Inventory& inventory, const std::vector<bool>& configured,
                     const std::vector<GpuHold>& claim_holds, const std::vector<GpuHold>& pod_holds);

// The GPU behind a published device name ("gpu-0", "gpu-0-mig-1g5gb-13-0") or a GPU UUID.
std::optional<size_t> gpu_of_device(const Inventory& inventory, const std::string& name_or_uuid);

// The GPUs prepared claims hold (admin access holds nothing: it only looks at devices in use).
std::vector<GpuHold> claim_holds(const Inventory& inventory, const std::vector<PreparedClaim>& claims);

// The GPUs pods hold through the device-plugin API: each ID of `pods` found in `plan` (the full
// plan, before DRA takes its GPUs) or naming a GPU or MIG device by UUID ("GPU-x", "GPU-x::3",
// "MIG-y"), so IDs of an earlier config with another sharing still count.
std::vector<GpuHold> pod_holds(const Inventory& inventory, const ResourcePlan& plan,
                               const std::vector<podresources::ContainerDevices>& pods);

// The driver names of kgpu.dra.* (driver, amdDriver, intelDriver), and those of them it serves
// (kgpu.dra.vendors), in the order NVIDIA, AMD, Intel.
DriverNames driver_names(const DraConfig& dra);
std::vector<std::string> served_drivers(const DraConfig& dra);

// What DRA publishes of `pools` (build_publication's): the pools of served drivers, each with only
// the devices of owned GPUs (a MIG device follows its GPU).
std::vector<DriverPool> served_pools(std::vector<DriverPool> pools, const Inventory& inventory, const DraConfig& dra,
                                     const std::vector<bool>& owned);

// Leaves out of `pools` every device that sits on hardware a prepared claim holds under another
// device name (issue 28, item 12): after a MIG re-layout of a GPU a whole-GPU claim holds, its new
// MIG devices; a full GPU whose MIG device a claim holds. The scheduler would allocate them and
// the prepare would refuse. Returns one sentence per device left out.
std::vector<std::string> hide_devices_held_elsewhere(std::vector<DriverPool>& pools,
                                                     const std::vector<PreparedClaim>& claims);

// The device-plugin share: `plan` without the devices of owned GPUs; a resource left without
// devices goes too (one that never had any, such as a device group, stays).
ResourcePlan without_owned(ResourcePlan plan, const std::vector<bool>& owned);

}  // namespace kgpu::dra
