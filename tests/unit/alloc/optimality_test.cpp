// preferred_allocation on whole GPUs must return exactly the set a brute-force search picks under
// the documented score (brute_force.h), on hand-built node shapes and random topologies.
#include <gtest/gtest.h>

#include <bit>
#include <tuple>

#include "alloc/preferred.h"
#include "unit/alloc/brute_force.h"

namespace kgpu {
namespace {

using namespace kgpu::testing;

TEST(PreferredOptimality, DgxA100AllSubsets) {
  exhaustive(testing::dgx_a100());
}
TEST(PreferredOptimality, HgxH100AllSubsets) {
  exhaustive(testing::hgx_h100());
}
TEST(PreferredOptimality, L4PairsAllSubsets) {
  exhaustive(testing::l4x4_pairs());
}
TEST(PreferredOptimality, T4x2AllSubsets) {
  exhaustive(testing::t4x2());
}

TEST(PreferredOptimality, RandomTopologiesUpTo12Gpus) {
  std::mt19937 rng(20261122);
  for (size_t n = 2; n <= 12; ++n)
    for (uint32_t seed = 0; seed < 6; ++seed) {
      const Inventory inv = testing::random_topology(n, static_cast<uint32_t>(n * 100 + seed));
      const uint64_t all = (uint64_t{1} << n) - 1;
      for (int trial = 0; trial < 6; ++trial) {
        const uint64_t avail = trial == 0 ? all : (rng() & all) | 1;
        uint64_t must = 0;
        for (size_t i = 0; i < n; ++i)
          if ((avail >> i & 1) && rng() % 6 == 0 && std::popcount(must) < 3) must |= uint64_t{1} << i;
        for (int size = std::max(1, std::popcount(must)); size <= std::popcount(avail); ++size) {
          expect_optimal(inv, avail, must, size);
          if (HasFatalFailure()) return;
        }
      }
    }
}

TEST(PreferredOptimality, Random16Gpus) {
  for (uint32_t seed = 0; seed < 2; ++seed) {
    const Inventory inv = testing::random_topology(16, 7000 + seed);
    const uint64_t all = (uint64_t{1} << 16) - 1;
    const uint64_t must = seed == 0 ? 0 : 0x21;
    for (int size : {2, 3, 5, 8, 11, 15}) {
      expect_optimal(inv, all, must, size);
      if (HasFatalFailure()) return;
    }
  }
}

}  // namespace
}  // namespace kgpu
