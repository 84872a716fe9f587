#pragma once
// GPU memory shares (kgpu.dra.sharing.memory, issue 31), the pure parts: which of the node's GPUs
// are published for shares and with what request policy, and what one share's containers get as
// an MPS client of its GPU's control daemon. A share's memory is enforced by MPS
// (CUDA_MPS_PINNED_DEVICE_MEM_LIMIT), not only counted; the claim store checks the scheduler's
// arithmetic (the GPU's shares never add up to more than its memory).
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/inventory.h"
#include "dra/model/dra_device.h"
#include "dra/sharing/prepare.h"

namespace kgpu::dra {

struct MemoryShareOptions {
  std::set<std::string> gpus;  // UUIDs of the full NVIDIA GPUs published for shares
  CapacityRequestPolicy memory_policy;
  uint64_t multiprocessors_default = 0;
  // Entries that match no GPU DRA owns, GPUs in MIG mode, an unreadable policy: said once per
  // change by the caller; those GPUs are published whole.
  std::vector<std::string> notes;
};

// kgpu.dra.sharing.memory resolved against the node: "all" is every full NVIDIA GPU DRA owns
// (`owned`, per inventory position; empty: all), an index or UUID that one GPU.
MemoryShareOptions memory_share_options(const Inventory& inventory, const DraMemorySharing& config,
                                        const std::vector<bool>& owned);

// CUDA_MPS_ACTIVE_THREAD_PERCENTAGE for a share that consumed `consumed` of the GPU's `total` SMs:
// rounded up, so a share never gets fewer SMs than it was allocated (1..100).
int thread_percentage_for(uint64_t consumed, uint64_t total);

// CUDA_MPS_PINNED_DEVICE_MEM_LIMIT for a share of `memory_bytes` of GPU `uuid`: "<uuid>=<MiB>M",
// whole MiB rounded down as MPS takes them (a share is at least 1 MiB: the config check).
std::string pinned_limit_for(const std::string& uuid, uint64_t memory_bytes);

// The GPUs whose memory-share daemon some prepared claim uses (one daemon per shared GPU).
std::set<std::string> share_daemon_gpus(const std::vector<PreparedClaim>& prepared);

// While a shared GPU's daemon is not ready (dead, restarting), its devices carry the taint
// <driver>/mps-daemon=not-ready (NoSchedule), so no new share lands on it: the claim stores never
// prepare a tainted device. Taints the devices of `pools` on a GPU of `gpus_without_daemon`
// (by UUID) once each; returns a line per device tainted here, for the log.
std::vector<std::string> taint_gpus_without_share_daemon(std::vector<DriverPool>& pools,
                                                         const std::set<std::string>& gpus_without_daemon);

}  // namespace kgpu::dra
