#include "alloc/subset_search.h"

#include <algorithm>
#include <array>
#include <bit>
#include <functional>
#include <tuple>

namespace kgpu::alloc {
namespace {

uint64_t order_bit(size_t n, size_t i) { return uint64_t{1} << (n - 1 - i); }

// Depth-first branch and bound over the non-required items ("take" before "skip"). Every node bounds each key component from above; a node whose bound tuple is not
// lexicographically greater than the best answer so far cannot contain a better answer and is cut.
// The bounds:
//  load     current + the r largest loads among the items still open (precomputed per position);
//  affinity current + the r largest of (gain to the chosen set + half the r-1 heaviest edges of
//           the item to the other items still open); doubled to stay in integers;
//  leftover total - chosen-degree sum + affinity, using the affinity bound and the r smallest
//           degrees still open (leftover = total + affinity(C) - sum of degrees over C);
//  order    current + the r largest order bits still open.
class Search {
 public:
  explicit Search(const SubsetProblem& p) : p_(p) {
    need_ = p.k - static_cast<size_t>(std::popcount(p.required));
    degree_.assign(p.n, 0);
    for (size_t i = 0; i < p.n; ++i)
      for (size_t j = 0; j < p.n; ++j)
        if (i != j) degree_[i] += w(i, j);
    // Visit heavily connected items first: good answers come early and the items left open
    // deeper down are the weak ones, so the bounds tighten fast. The answer does not depend on
    // this order (the key is a total order), only the running time does.
    for (size_t i = 0; i < p.n; ++i)
      if (!(p.required >> i & 1)) open_.push_back(i);
    std::stable_sort(open_.begin(), open_.end(), [&](size_t a, size_t b) {
      return std::tuple(load(a), degree_[a]) > std::tuple(load(b), degree_[b]);
    });
    m_ = open_.size();
    for (size_t i = 0; i < p.n; ++i) total_ += degree_[i];
    total_ /= 2;
    gain_.assign(p.n, 0);
    precompute_suffix_tables();
    precompute_heaviest_edges();
  }

  SubsetChoice run() {
    State s;
    for (size_t i = 0; i < p_.n; ++i)
      if (p_.required >> i & 1) take(s, i);
    seed_with_greedy(s);
    dfs(s, 0, need_);
    return best_;
  }

 private:
  struct State {
    uint64_t mask = 0;
    int64_t load = 0, affinity = 0, degree_sum = 0;
    uint64_t order = 0;
  };

  int64_t w(size_t i, size_t j) const { return p_.weight[i * p_.n + j]; }
  int64_t load(size_t i) const { return p_.load.empty() ? 0 : p_.load[i]; }
  size_t idx(size_t pos, size_t r) const { return pos * (need_ + 1) + r; }

  void take(State& s, size_t i) {
    s.mask |= uint64_t{1} << i;
    s.load += load(i);
    s.affinity += gain_[i];
    s.degree_sum += degree_[i];
    s.order += order_bit(p_.n, i);
    for (size_t u = 0; u < p_.n; ++u) gain_[u] += w(u, i);
  }
  void untake(State& s, size_t i) {
    for (size_t u = 0; u < p_.n; ++u) gain_[u] -= w(u, i);
    s.mask &= ~(uint64_t{1} << i);
    s.load -= load(i);
    s.affinity -= gain_[i];
    s.degree_sum -= degree_[i];
    s.order -= order_bit(p_.n, i);
  }

  SubsetKey key_of(const State& s) const {
    return {s.load, s.affinity, total_ - s.degree_sum + s.affinity, s.order};
  }

  void precompute_suffix_tables() {
    // For each open position and each r <= need: largest-r load, smallest-r degree, next-r bits.
    const size_t rows = m_ + 1, cols = need_ + 1;
    top_load_.assign(rows * cols, 0);
    low_degree_.assign(rows * cols, 0);
    next_bits_.assign(rows * cols, 0);
    std::vector<int64_t> loads, degrees;
    std::vector<uint64_t> bits;
    for (size_t pos = 0; pos < m_; ++pos) {
      loads.clear();
      degrees.clear();
      bits.clear();
      for (size_t q = pos; q < m_; ++q) {
        loads.push_back(load(open_[q]));
        degrees.push_back(degree_[open_[q]]);
        bits.push_back(order_bit(p_.n, open_[q]));
      }
      std::sort(loads.begin(), loads.end(), std::greater<>());
      std::sort(degrees.begin(), degrees.end());
      std::sort(bits.begin(), bits.end(), std::greater<>());
      for (size_t r = 1; r <= need_ && r <= m_ - pos; ++r) {
        top_load_[idx(pos, r)] = top_load_[idx(pos, r - 1)] + loads[r - 1];
        low_degree_[idx(pos, r)] = low_degree_[idx(pos, r - 1)] + degrees[r - 1];
        next_bits_[idx(pos, r)] = next_bits_[idx(pos, r - 1)] + bits[r - 1];
      }
    }
  }

  // heaviest(pos, a, c): sum of the c heaviest edges from the open item at position a to the
  // other open items at positions >= pos (the only ones a completion below pos can still add).
  // Built for each a by inserting one edge at a time as pos walks down: O(m^3) per search.
  size_t hidx(size_t pos, size_t a, size_t c) const { return (pos * m_ + a) * (need_ + 1) + c; }
  int64_t heaviest(size_t pos, size_t a, size_t c) const { return heaviest_[hidx(pos, a, c)]; }

  void precompute_heaviest_edges() {
    heaviest_.assign(m_ * m_ * (need_ + 1), 0);
    std::vector<int64_t> row;  // sorted, heaviest first
    for (size_t a = 0; a < m_; ++a) {
      row.clear();
      for (size_t b = a + 1; b < m_; ++b) row.push_back(w(open_[a], open_[b]));
      std::sort(row.begin(), row.end(), std::greater<>());
      for (size_t pos = a + 1; pos-- > 0;) {
        if (pos < a) row.insert(std::upper_bound(row.begin(), row.end(), w(open_[a], open_[pos]), std::greater<>()),
                                w(open_[a], open_[pos]));
        for (size_t c = 1; c <= need_ && c <= row.size(); ++c)
          heaviest_[hidx(pos, a, c)] = heaviest_[hidx(pos, a, c - 1)] + row[c - 1];
      }
    }
  }

  // A good first answer makes the bounds bite from the start: add, one at a time, the open item
  // with the best (load, gain to the chosen set, low degree, low index).
  void seed_with_greedy(State s) {
    std::vector<size_t> taken;
    for (size_t r = 0; r < need_; ++r) {
      size_t pick = p_.n;
      for (size_t i : open_) {
        if (s.mask >> i & 1) continue;
        if (pick == p_.n) { pick = i; continue; }
        auto better = std::tuple(load(i), gain_[i], -degree_[i]) > std::tuple(load(pick), gain_[pick], -degree_[pick]);
        if (better) pick = i;
      }
      take(s, pick);
      taken.push_back(pick);
    }
    best_ = {s.mask, key_of(s)};
    for (auto it = taken.rbegin(); it != taken.rend(); ++it) untake(s, *it);
  }

  bool bound_beats_best(const State& s, size_t pos, size_t r) {
    SubsetKey ub;
    ub.load = s.load + top_load_[idx(pos, r)];
    if (ub.load < best_.key.load) return false;
    // Affinity bound: the r largest values of 2*gain + heaviest(r-1) among open items.
    std::array<int64_t, kMaxItems> vals{};
    size_t count = 0;
    for (size_t q = pos; q < m_; ++q) vals[count++] = 2 * gain_[open_[q]] + heaviest(pos, q, r - 1);
    std::nth_element(vals.begin(), vals.begin() + static_cast<std::ptrdiff_t>(r) - 1,
                     vals.begin() + static_cast<std::ptrdiff_t>(count), std::greater<>());
    int64_t extra = 0;
    for (size_t q = 0; q < r; ++q) extra += vals[q];
    ub.affinity = s.affinity + extra / 2;
    ub.leftover = total_ - s.degree_sum - low_degree_[idx(pos, r)] + ub.affinity;
    ub.order = s.order + next_bits_[idx(pos, r)];
    return ub > best_.key;
  }

  void dfs(State& s, size_t pos, size_t r) {
    if (r == 0) {
      const SubsetKey k = key_of(s);
      if (k > best_.key) best_ = {s.mask, k};
      return;
    }
    if (m_ - pos < r) return;
    if (!bound_beats_best(s, pos, r)) return;
    const size_t i = open_[pos];
    take(s, i);
    dfs(s, pos + 1, r - 1);
    untake(s, i);
    dfs(s, pos + 1, r);
  }

  const SubsetProblem& p_;
  std::vector<size_t> open_;
  size_t m_ = 0, need_ = 0;
  std::vector<int64_t> degree_, gain_, top_load_, low_degree_, heaviest_;
  std::vector<uint64_t> next_bits_;
  int64_t total_ = 0;
  SubsetChoice best_;
};

}  // namespace

SubsetKey evaluate(const SubsetProblem& p, uint64_t mask) {
  SubsetKey key;
  for (size_t i = 0; i < p.n; ++i) {
    const bool in_i = mask >> i & 1;
    if (in_i) {
      key.load += p.load.empty() ? 0 : p.load[i];
      key.order += order_bit(p.n, i);
    }
    for (size_t j = i + 1; j < p.n; ++j) {
      const bool in_j = mask >> j & 1;
      if (in_i && in_j) key.affinity += p.weight[i * p.n + j];
      if (!in_i && !in_j) key.leftover += p.weight[i * p.n + j];
    }
  }
  return key;
}

SubsetChoice best_subset(const SubsetProblem& problem) {
  if (problem.n == 0) return {};
  Search search(problem);
  return search.run();
}

}  // namespace kgpu::alloc
