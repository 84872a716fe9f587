#pragma once
// The brute-force reference for preferred_allocation on whole GPUs. It re-derives the documented
// score from the raw topology (its own PCIe point table, its own lexicographic tuple),
// independently of the weight folding and the branch and bound in src/alloc.
#include <gtest/gtest.h>

#include <bit>
#include <tuple>

#include "alloc/preferred.h"
#include "unit/alloc/topologies.h"

namespace kgpu::testing {


inline int ref_pcie(const Inventory& inv, size_t a, size_t b) {
  switch (inv.topology.links[a][b].pcie) {
    case PcieLevel::SameBoard: return 6;
    case PcieLevel::SingleSwitch: return 5;
    case PcieLevel::MultipleSwitches: return 4;
    case PcieLevel::HostBridge: return 3;
    case PcieLevel::SameNuma: return 2;
    case PcieLevel::CrossSocket: return 1;
    case PcieLevel::Unknown: break;
  }
  const auto& na = inv.gpus[a].numa_node;
  const auto& nb = inv.gpus[b].numa_node;
  if (!na || !nb) return 0;
  return *na == *nb ? 2 : 1;
}

inline int ref_numa(const Inventory& inv, size_t a, size_t b) {
  const auto& na = inv.gpus[a].numa_node;
  const auto& nb = inv.gpus[b].numa_node;
  return na && nb && *na == *nb ? 1 : 0;
}

using RefScore = std::tuple<int64_t, int64_t, int64_t, int64_t, int64_t, int64_t>;

inline RefScore ref_score(const Inventory& inv, uint64_t chosen, uint64_t available) {
  int64_t cn = 0, cp = 0, cu = 0, ln = 0, lp = 0, lu = 0;
  const uint64_t left = available & ~chosen;
  for (size_t a = 0; a < inv.gpus.size(); ++a)
    for (size_t b = a + 1; b < inv.gpus.size(); ++b) {
      const bool both_chosen = (chosen >> a & 1) && (chosen >> b & 1);
      const bool both_left = (left >> a & 1) && (left >> b & 1);
      if (!both_chosen && !both_left) continue;
      const int64_t n = inv.topology.links[a][b].nvlinks, p = ref_pcie(inv, a, b), u = ref_numa(inv, a, b);
      if (both_chosen) { cn += n; cp += p; cu += u; }
      else { ln += n; lp += p; lu += u; }
    }
  return {cn, cp, cu, ln, lp, lu};
}

inline std::vector<int> indices(uint64_t mask) {
  std::vector<int> out;
  for (int i = 0; i < 64; ++i)
    if (mask >> i & 1) out.push_back(i);
  return out;
}

// Best chosen mask: highest score, then the lexicographically smallest list of GPU indices.
inline uint64_t brute_force(const Inventory& inv, uint64_t available, uint64_t must, int size) {
  uint64_t best = 0;
  RefScore best_score{};
  bool found = false;
  for (uint64_t sub = available;; sub = (sub - 1) & available) {
    if ((sub & must) == must && std::popcount(sub) == size) {
      const auto s = ref_score(inv, sub, available);
      if (!found || s > best_score || (s == best_score && indices(sub) < indices(best))) {
        best = sub;
        best_score = s;
        found = true;
      }
    }
    if (sub == 0) break;
  }
  return best;
}

inline uint64_t mask_of(const Resource& r, const std::vector<std::string>& ids) {
  uint64_t m = 0;
  for (const auto& id : ids)
    for (size_t i = 0; i < r.devices.size(); ++i)
      if (r.devices[i].id == id) m |= uint64_t{1} << i;
  return m;
}

inline void expect_optimal(const Inventory& inv, uint64_t available, uint64_t must, int size) {
  static const Config config;
  const Resource r = testing::whole_gpus(inv);
  auto got = preferred_allocation(config, inv, r, ids_of_mask(r, available), ids_of_mask(r, must), size);
  ASSERT_TRUE(got.ok()) << got.error().message;
  ASSERT_EQ(got->size(), static_cast<size_t>(size));
  const uint64_t want = brute_force(inv, available, must, size);
  ASSERT_EQ(mask_of(r, *got), want) << "available " << available << " must " << must << " size " << size
                                    << " got score " << std::get<0>(ref_score(inv, mask_of(r, *got), available))
                                    << " want " << std::get<0>(ref_score(inv, want, available));
}

// Every available subset, every must-include subset of it, every feasible size.
inline void exhaustive(const Inventory& inv) {
  const uint64_t all = (uint64_t{1} << inv.gpus.size()) - 1;
  for (uint64_t avail = 1; avail <= all; ++avail)
    for (uint64_t must = avail;; must = (must - 1) & avail) {
      for (int size = std::max(1, std::popcount(must)); size <= std::popcount(avail); ++size)
        expect_optimal(inv, avail, must, size);
      if (::testing::Test::HasFatalFailure() || must == 0) break;
    }
}

}  // namespace kgpu::testing
