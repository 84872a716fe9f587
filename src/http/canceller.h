#pragma once
// Ends HTTP requests in flight at once, from any thread, in any phase (connect, TLS handshake,
// reading), and refuses later ones: every request given the Canceller polls its eventfd next to its
// socket. Once cancelled it stays cancelled (the eventfd is never drained). Also a stoppable sleep
// for the caller's backoff. No thread, no timer: nothing wakes while nothing happens.
#include <chrono>

#include "core/result.h"
#include "core/unique_fd.h"

namespace kgpu::http {

class Canceller {
 public:
  static Result<Canceller> create();

  // Safe from any thread (and from a signal handler: one write(2)).
  void cancel() const;
  bool cancelled() const;
  // Waits up to `delay`; false at once when cancel() was (or is) called.
  bool sleep_for(std::chrono::milliseconds delay) const;

  int fd() const { return fd_.get(); }  // readable once cancelled

 private:
  explicit Canceller(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
};

}  // namespace kgpu::http
