#pragma once
// The exact search behind preferred_allocation: choose k of n items (n <= 64) maximising a
// lexicographic key. Items are GPUs (or parent GPUs of replicas / MIG devices); the caller folds
// the topology into pair weights. Pure, allocation-light, no I/O.
#include <compare>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace kgpu::alloc {

inline constexpr size_t kMaxItems = 64;

struct SubsetProblem {
  size_t n = 0;
  std::vector<int64_t> weight;  // n * n, symmetric, non-negative; diagonal ignored
  std::vector<int64_t> load;    // per item, maximised first; empty means all zero
  uint64_t required = 0;        // items that must be in the answer
  size_t k = 0;                 // size of the answer, required items included
};

// Larger is better, compared member by member in this order.
struct SubsetKey {
  int64_t load = 0;      // sum of load over chosen items
  int64_t affinity = 0;  // sum of weight over chosen pairs
  int64_t leftover = 0;  // sum of weight over pairs of items NOT chosen (fragmentation)
  uint64_t order = 0;    // sum of 2^(n-1-i) over chosen i: favours the lowest indices
  auto operator<=>(const SubsetKey&) const = default;
};

struct SubsetChoice {
  uint64_t mask = 0;
  SubsetKey key;
  bool operator==(const SubsetChoice&) const = default;
};

// The key of one candidate answer (any mask; used by tests and explanations).
SubsetKey evaluate(const SubsetProblem& problem, uint64_t mask);

// The unique best answer. Preconditions (the caller validates): n <= kMaxItems,
// popcount(required) <= k <= n, weights small enough that n*n*max_weight fits in int64.
SubsetChoice best_subset(const SubsetProblem& problem);

}  // namespace kgpu::alloc
