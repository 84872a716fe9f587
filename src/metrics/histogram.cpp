#include "metrics/histogram.h"

#include <algorithm>
#include <cmath>

namespace kgpu {

void LatencyHistogram::observe(double seconds) noexcept {
  if (!(seconds >= 0)) seconds = 0;  // negative or NaN: a clock hiccup, count it as instant
  const auto it = std::lower_bound(kBounds.begin(), kBounds.end(), seconds);
  const auto index = static_cast<std::size_t>(it - kBounds.begin());
  buckets_[index].fetch_add(1, std::memory_order_relaxed);
  // Clamp so that a absurd value cannot overflow the integer sum (about 584 years of ns).
  const double ns = std::min(seconds * 1e9, 1e15);
  sum_ns_.fetch_add(static_cast<uint64_t>(std::llround(ns)), std::memory_order_relaxed);
}

LatencyHistogram::Snapshot LatencyHistogram::snapshot() const noexcept {
  Snapshot s;
  uint64_t running = 0;
  for (std::size_t i = 0; i < kBounds.size(); ++i) {
    running += buckets_[i].load(std::memory_order_relaxed);
    s.cumulative[i] = running;
  }
  s.count = running + buckets_[kBounds.size()].load(std::memory_order_relaxed);
  s.sum_seconds = static_cast<double>(sum_ns_.load(std::memory_order_relaxed)) / 1e9;
  return s;
}

}  // namespace kgpu
