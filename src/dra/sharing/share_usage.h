#pragma once
// What the prepared memory shares (kgpu.dra.sharing.memory) hold of each shared GPU, for the
// operator: `kgpu devices --live` (from the checkpoint) and /metrics (from the running store).
// Pure.
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/inventory.h"
#include "dra/sharing/prepare.h"

namespace kgpu::dra {

struct ShareUse {
  std::string claim;  // "team-a/train (<uid>)"
  uint64_t memory_bytes = 0;
  std::optional<uint64_t> multiprocessors;
  std::optional<int> active_thread_percentage;
  bool operator==(const ShareUse&) const = default;
};

struct SharedGpuUse {
  std::string gpu_uuid;
  std::string device;        // its published name, once a share names it
  uint64_t memory_bytes = 0;  // the GPU's memory
  uint64_t shared_bytes = 0;  // held by its prepared shares
  std::vector<ShareUse> shares;  // in claim UID order
  bool operator==(const SharedGpuUse&) const = default;
};

// Every GPU of `shareable` (UUIDs) and every GPU a prepared share names, in inventory order (a
// GPU no longer in the inventory last): its memory, what the shares hold, and each share.
std::vector<SharedGpuUse> shared_gpu_use(const Inventory& inventory, const std::set<std::string>& shareable,
                                         const std::vector<PreparedClaim>& prepared);

// kgpu_dra_gpu_memory_shared_bytes{gpu} and kgpu_dra_gpu_memory_shares{gpu} (Prometheus text).
void append_share_metrics(const std::vector<SharedGpuUse>& use, std::string& out);

nlohmann::json share_use_json(const std::vector<SharedGpuUse>& use);
// One line per GPU ("GPU-... gpu-1: 3 shares hold 40Gi of 40Gi, 0 left"), then one per share.
std::string share_use_text(const std::vector<SharedGpuUse>& use);

}  // namespace kgpu::dra
