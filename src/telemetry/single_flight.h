#pragma once
// Single flight: callers that arrive while a run is in progress wait for it and share its result
// instead of starting their own, so N concurrent scrapes cost one NVML read. Nothing is cached
// after a run ends: the next caller starts a fresh one (readings are never served stale).
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <memory>
#include <mutex>

namespace kgpu::telemetry {

template <typename T>
class SingleFlight {
 public:
  using Ptr = std::shared_ptr<const T>;

  // Runs `fn` (returning Ptr) unless a run is in flight; then waits for that run's result. If the
  // run throws, the caller that ran it gets the exception and the waiters get nullptr.
  template <typename Fn>
  Ptr run(Fn&& fn) {
    std::unique_lock lock(mu_);
    if (in_flight_) {
      const uint64_t generation = generation_;
      ++waiting_;
      cv_.notify_all();  // lets tests observe the waiter
      cv_.wait(lock, [&] { return generation_ != generation; });
      --waiting_;
      return last_;
    }
    in_flight_ = true;
    lock.unlock();
    Ptr result;
    std::exception_ptr failure;
    try {
      result = fn();
    } catch (...) {
      failure = std::current_exception();
    }
    lock.lock();
    last_ = result;
    in_flight_ = false;
    ++generation_;
    cv_.notify_all();
    lock.unlock();
    if (failure) std::rethrow_exception(failure);
    return result;
  }

  // Callers now waiting on an in-flight run (tests use it to line up concurrent scrapes).
  size_t waiting() const {
    std::lock_guard lock(mu_);
    return waiting_;
  }
  // Blocks until at least `n` callers wait, or the deadline passes; true when they do.
  template <typename Deadline>
  bool wait_for_waiters(size_t n, Deadline deadline) const {
    std::unique_lock lock(mu_);
    return cv_.wait_until(lock, deadline, [&] { return waiting_ >= n; });
  }

 private:
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  bool in_flight_ = false;
  uint64_t generation_ = 0;
  size_t waiting_ = 0;
  Ptr last_;
};

}  // namespace kgpu::telemetry
