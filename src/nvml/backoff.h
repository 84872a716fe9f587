#pragma once
// Capped exponential backoff: initial, 2x, 4x ... up to max. Pure; callers do the waiting.
#include <algorithm>
#include <chrono>

namespace kgpu {

class Backoff {
 public:
  Backoff(std::chrono::milliseconds initial, std::chrono::milliseconds max)
      : initial_(std::max(initial, std::chrono::milliseconds(1))), max_(std::max(max, initial_)) {}
  // The delay to wait now; the following call returns twice as much, capped.
  std::chrono::milliseconds next() {
    auto d = current_.count() == 0 ? initial_ : std::min(current_ * 2, max_);
    current_ = d;
    return d;
  }
  void reset() { current_ = std::chrono::milliseconds(0); }

 private:
  std::chrono::milliseconds initial_, max_;
  std::chrono::milliseconds current_{0};
};

}  // namespace kgpu
