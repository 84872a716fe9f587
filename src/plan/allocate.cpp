#include "plan/allocate.h"

#include <algorithm>
#include <map>
#include <unordered_set>

#include "plan/mps_limits.h"
#include "plan/mps_paths.h"

namespace kgpu {

namespace {

std::string prefix(const Resource& r) { return "allocation request for \"" + r.name + "\": "; }

// The client side of MPS: where the control pipe is, the shared memory, and this container's share
// of each GPU (scaled by the replicas it received, so a 2-replica request gets twice the share).
void add_mps_edits(const Config& config, const Inventory& inventory, const Resource& resource,
                   const std::vector<std::string>& ids, ContainerEdits& edits) {
  const std::string pipe = mps_container_pipe_dir(resource.name);
  edits.envs["CUDA_MPS_PIPE_DIRECTORY"] = pipe;
  edits.mounts.push_back({pipe, mps_pipe_dir(config.mps_root, resource.name), false});
  edits.mounts.push_back({"/dev/shm", mps_shm_dir(config.mps_root), false});

  struct Share {
    int received = 0;
    int replicas = 1;
  };
  std::map<size_t, Share> per_gpu;  // by position in Inventory::gpus
  std::unordered_set<std::string_view> seen;
  for (const auto& id : ids) {
    if (!seen.insert(id).second) continue;  // a repeated ID is one replica, not two
    const AdvertisedDevice* d = resource.find(id);
    Share& s = per_gpu[d->gpu];
    ++s.received;
    if (d->replica >= 0) s.replicas = resource.replicas;
  }
  int pct = 100;
  for (const auto& [gpu, s] : per_gpu) pct = std::min(pct, mps_thread_percentage(s.replicas, s.received));
  // One value for the whole client: the smallest share, so no GPU is used beyond what was granted.
  edits.envs["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"] = std::to_string(pct);

  // CUDA_MPS_PINNED_DEVICE_MEM_LIMIT is "<ordinal>=<limit>,…" with ordinals as the client's CUDA
  // enumerates them; inside the container only the allocated GPUs exist, enumerated in PCI bus order.
  std::vector<size_t> order;
  for (const auto& [gpu, s] : per_gpu) order.push_back(gpu);
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return std::tie(inventory.gpus[a].pci_bus_id, inventory.gpus[a].index) <
           std::tie(inventory.gpus[b].pci_bus_id, inventory.gpus[b].index);
  });
  std::string limits;
  for (size_t ordinal = 0; ordinal < order.size(); ++ordinal) {
    const Share& s = per_gpu[order[ordinal]];
    const uint64_t mib = mps_memory_limit_mib(inventory.gpus[order[ordinal]].memory_bytes, s.replicas, s.received);
    if (mib == 0) continue;  // memory unknown: leave that GPU to the daemon's default
    if (!limits.empty()) limits += ',';
    limits += std::to_string(ordinal) + "=" + std::to_string(mib) + "M";
  }
  if (!limits.empty()) edits.envs["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"] = limits;
}

}  // namespace

std::vector<std::string> repeated_ids(const std::vector<std::string>& ids) {
  std::unordered_set<std::string_view> seen;
  std::unordered_set<std::string_view> reported;
  std::vector<std::string> out;
  for (const auto& id : ids)
    if (!seen.insert(id).second && reported.insert(id).second) out.push_back(id);
  return out;
}

Result<std::vector<BackingDevice>> backing_devices(const Inventory& inventory, const Resource& resource,
                                                   const std::vector<std::string>& ids) {
  if (ids.empty()) return Error::invalid(prefix(resource) + "no device IDs requested");
  if (resource.sharing != SharingKind::None && resource.fail_requests_greater_than_one && ids.size() > 1)
    return Error::invalid(prefix(resource) + "maximum request size for shared resources is 1; found " +
                          std::to_string(ids.size()) + " (failRequestsGreaterThanOne is set)");
  std::vector<BackingDevice> out;
  out.reserve(ids.size());
  std::unordered_set<std::string_view> seen;
  for (const auto& id : ids) {
    if (!seen.insert(id).second) continue;  // allocated once, as NVIDIA's plugin (v0.18+) does
    const AdvertisedDevice* d = resource.find(id);
    if (!d) return Error::invalid(prefix(resource) + "unknown device \"" + id + "\"");
    if (d->gpu >= inventory.gpus.size() || (d->mig && *d->mig >= inventory.gpus[d->gpu].mig_devices.size()))
      return Error::internal(prefix(resource) + "device \"" + id + "\" refers to hardware missing from the inventory");
    const BackingDevice b{d->gpu, d->mig};
    // Replicas of one GPU collapse to that GPU; the first request position wins.
    if (std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
  }
  return out;
}

Result<ContainerEdits> allocate(const Config& config, const Inventory& inventory, const Resource& resource,
                                const std::vector<std::string>& ids) {
  auto backing = backing_devices(inventory, resource, ids);
  if (!backing) return backing.error();
  ContainerEdits edits = resource.vendor == Vendor::Nvidia
                             ? nvidia_device_edits(config, inventory, *backing)
                             : vendor_device_edits(config, inventory, resource, *backing);
  if (resource.sharing == SharingKind::Mps) add_mps_edits(config, inventory, resource, ids, edits);
  return edits;
}

void resolve_optional_devices(ContainerEdits& edits, const PresenceCheck& present) {
  std::erase_if(edits.devices, [&](DeviceSpec& d) {
    if (!d.only_if_present) return false;
    d.only_if_present = false;
    return !present(d.host_path);
  });
}

Result<ContainerEdits> allocate(const Config& config, const Inventory& inventory, const Resource& resource,
                                const std::vector<std::string>& ids, const PresenceCheck& present) {
  auto edits = allocate(config, inventory, resource, ids);
  if (edits) resolve_optional_devices(*edits, present);
  return edits;
}

}  // namespace kgpu
