#include <algorithm>

#include "alloc/preferred.h"

namespace kgpu {
namespace {

// PCIe proximity points, closest highest (the same order as NVIDIA's gpuallocator, 1..6).
int pcie_points(PcieLevel level) {
  switch (level) {
    case PcieLevel::SameBoard: return 6;
    case PcieLevel::SingleSwitch: return 5;
    case PcieLevel::MultipleSwitches: return 4;
    case PcieLevel::HostBridge: return 3;
    case PcieLevel::SameNuma: return 2;
    case PcieLevel::CrossSocket: return 1;
    case PcieLevel::Unknown: return 0;
  }
  return 0;
}

bool full_matrix(const Topology& t, size_t n) {
  if (t.links.size() != n) return false;
  return std::all_of(t.links.begin(), t.links.end(), [n](const auto& row) { return row.size() == n; });
}

// NVLink counts beyond this are not real hardware (18 on H100); clamping keeps the folded weight
// far from int64 overflow whatever a backend reports.
constexpr int kMaxNvlinks = 64;

}  // namespace

TopologyScorer::TopologyScorer(const Inventory& inventory) : n_(inventory.gpus.size()) {
  has_topology_ = n_ > 0 && full_matrix(inventory.topology, n_);
  affinity_.assign(n_ * n_, {});
  weight_.assign(n_ * n_, 0);
  // Fold (nvlinks, pcie, numa) into one integer that orders sums of pairs lexicographically: a
  // set has at most P pairs, so a unit of a more important component must outweigh P times the
  // maximum of everything less important.
  const int64_t pairs = std::max<int64_t>(1, static_cast<int64_t>(n_ * (n_ - (n_ > 0 ? 1 : 0)) / 2));
  const int64_t unit_numa = 1;
  const int64_t unit_pcie = pairs * unit_numa + 1;
  const int64_t unit_nvlink = pairs * (6 * unit_pcie + unit_numa) + 1;
  for (size_t a = 0; a < n_; ++a) {
    for (size_t b = 0; b < n_; ++b) {
      if (a == b) continue;
      const auto& ga = inventory.gpus[a];
      const auto& gb = inventory.gpus[b];
      const bool numa_known = ga.numa_node && gb.numa_node;
      const bool same_numa = numa_known && *ga.numa_node == *gb.numa_node;
      PairAffinity aff;
      aff.numa = same_numa ? 1 : 0;
      if (has_topology_) {
        const auto& link = inventory.topology.link(a, b);
        aff.nvlinks = std::clamp(link.nvlinks, 0, kMaxNvlinks);
        aff.pcie = pcie_points(link.pcie);
      }
      // Degrade, never fail: without a PCIe level the NUMA nodes still say socket-local or not.
      if (aff.pcie == 0 && numa_known) aff.pcie = same_numa ? pcie_points(PcieLevel::SameNuma)
                                                            : pcie_points(PcieLevel::CrossSocket);
      affinity_[a * n_ + b] = aff;
      weight_[a * n_ + b] = aff.nvlinks * unit_nvlink + aff.pcie * unit_pcie + aff.numa * unit_numa;
    }
  }
}

int64_t TopologyScorer::weight(size_t a, size_t b) const {
  if (a >= n_ || b >= n_) return 0;
  return weight_[a * n_ + b];
}

PairAffinity TopologyScorer::affinity(size_t a, size_t b) const {
  if (a >= n_ || b >= n_) return {};
  return affinity_[a * n_ + b];
}

}  // namespace kgpu
