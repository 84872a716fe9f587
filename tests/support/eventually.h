#pragma once
// For unit tests that must wait on a value no notification exists for (a monitor statistic, a loop's
// attempt counter): re-checks `pred` until it holds or `timeout` passes. The deadline bounds the
// test; nothing sleeps a fixed time.
#include <chrono>
#include <thread>

namespace kgpu::test {

template <typename Pred>
bool eventually(Pred pred, std::chrono::milliseconds timeout = std::chrono::seconds(5)) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::yield();
  }
  return pred();
}

}  // namespace kgpu::test
