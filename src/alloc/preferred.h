#pragma once
// GetPreferredAllocation policy: which of the kubelet's available device IDs a container should get.
// Pure functions over the ResourcePlan's Resource and the Inventory's Topology; no I/O.
//
// THE SCORE (what "best" means), compared lexicographically, larger is better:
//  1. load      only for shared (replica) and MIG resources, by sharedDevicesAllocationPolicy
//               (kgpu.migAllocationPolicy overrides it for MIG): distributed/spread prefers the
//               least allocated GPUs, packed/same-parent is a greedy fill (for MIG devices
//               starting on a parent able to hold the whole request when there is one; see
//               preferred.cpp);
//  2. affinity  the sum over every pair of chosen GPUs (must-include ones too) of the pair score,
//               itself lexicographic: NVLink lanes joining the pair first, then PCIe proximity
//               (same board 6, single switch 5, multiple switches 4, host bridge 3, same NUMA
//               node 2, cross socket 1, unknown 0), then NUMA alignment (1 when both GPUs report
//               the same NUMA node). Pairs with a must-include GPU count like any other, so
//               GPUs on the must-include devices' NUMA node win ties;
//  3. leftover  fragmentation: of equally good sets, keep the GPUs that stay free as well
//               connected as possible (maximise the affinity of the free set left behind);
//  4. order     finally the set with the lowest GPU indices, so the answer is deterministic.
// Missing or partial topology degrades the pair score (PCIe from NUMA nodes, or nothing), never
// to an error. The search is an exact branch and bound over bitmasks: optimal, microseconds.
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/inventory.h"
#include "core/resource_plan.h"
#include "core/result.h"

namespace kgpu {

// Pair score components between two GPUs (positions in Inventory::gpus).
struct PairAffinity {
  int nvlinks = 0;
  int pcie = 0;   // 0 (unknown) .. 6 (same board)
  int numa = 0;   // 1 when both GPUs are on the same known NUMA node
  bool operator==(const PairAffinity&) const = default;
};

// Everything the policy precomputes from one Inventory: pair scores folded into one integer per
// pair whose order is the lexicographic order above. Build it once per plan (the daemon keeps one
// next to its ResourcePlan); preferred_allocation(config, inventory, ...) builds one per call.
class TopologyScorer {
 public:
  explicit TopologyScorer(const Inventory& inventory);

  size_t gpu_count() const { return n_; }
  // The folded pair weight; 0 for unknown positions or a == b.
  int64_t weight(size_t a, size_t b) const;
  PairAffinity affinity(size_t a, size_t b) const;
  // True when the inventory carried a full pairwise topology matrix.
  bool has_topology() const { return has_topology_; }

 private:
  size_t n_ = 0;
  bool has_topology_ = false;
  std::vector<PairAffinity> affinity_;  // n_ * n_
  std::vector<int64_t> weight_;         // n_ * n_
};

// The preferred IDs: must_include first (in the given order), then the chosen ones. Errors
// (InvalidArgument) for size < 1, size > distinct available, must_include not in available or
// larger than size, and IDs the resource does not advertise.
Result<std::vector<std::string>> preferred_allocation(const Config& config, const Inventory& inventory,
                                                      const Resource& resource,
                                                      const std::vector<std::string>& available,
                                                      const std::vector<std::string>& must_include, int size);

Result<std::vector<std::string>> preferred_allocation(const Config& config, const TopologyScorer& scorer,
                                                      const Resource& resource,
                                                      const std::vector<std::string>& available,
                                                      const std::vector<std::string>& must_include, int size);

// Human-readable account of the choice for `kgpu devices --prefer N`: the chosen IDs, the GPUs
// behind them and the score breakdown (NVLink lanes, PCIe points, NUMA pairs, leftover
// connectivity). Errors are rendered as "error: <message>".
std::string explain_preferred(const Config& config, const Inventory& inventory, const Resource& resource,
                              const std::vector<std::string>& available,
                              const std::vector<std::string>& must_include, int size);

}  // namespace kgpu
