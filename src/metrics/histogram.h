#pragma once
// A fixed-bucket latency histogram that is safe to observe from any thread without locks or
// allocation: Allocate and GetPreferredAllocation observe on their hot path, so an observation is
// one bucket search over a dozen constants and two relaxed atomic adds.
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace kgpu {

class LatencyHistogram {
 public:
  // Upper bounds in seconds. Chosen around kgpu's targets (Allocate p50 < 40 µs, p99 < 200 µs)
  // while still resolving a slow node (up to 1 s); everything above lands in +Inf.
  static constexpr std::array<double, 13> kBounds = {10e-6, 25e-6, 50e-6, 100e-6, 250e-6,
                                                      500e-6, 1e-3, 2.5e-3, 5e-3, 10e-3,
                                                      25e-3, 100e-3, 1.0};

  struct Snapshot {
    std::array<uint64_t, kBounds.size()> cumulative{};  // observations <= kBounds[i]
    uint64_t count = 0;                                 // all observations (the +Inf bucket)
    double sum_seconds = 0;
  };

  void observe(double seconds) noexcept;
  Snapshot snapshot() const noexcept;

 private:
  // Per-bucket (non-cumulative) counts; the last slot is the overflow above the largest bound.
  std::array<std::atomic<uint64_t>, kBounds.size() + 1> buckets_{};
  // The sum is kept in whole nanoseconds so that it can be an integer atomic add.
  std::atomic<uint64_t> sum_ns_{0};
};

}  // namespace kgpu
