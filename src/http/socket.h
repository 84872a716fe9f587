#pragma once
// Non-blocking TCP for one request: every wait is a poll(2) on the socket and the Canceller's
// eventfd, bounded by the request's deadline, so nothing blocks past either (getaddrinfo for a DNS
// name excepted). Writes use MSG_NOSIGNAL: a peer that went away is an error, never a SIGPIPE.
#include <chrono>
#include <string>
#include <string_view>

#include "core/result.h"
#include "core/unique_fd.h"
#include "http/url.h"

namespace kgpu::http {

using Clock = std::chrono::steady_clock;

// The deadline and cancellation of one request.
class Waiter {
 public:
  Waiter(Clock::time_point deadline, int cancel_fd) : deadline_(deadline), cancel_fd_(cancel_fd) {}
  // Ready for `events` (POLLIN/POLLOUT; a hang-up or error counts as ready: the next call reports it);
  // an Error naming `phase` when the deadline passes or the request is cancelled first.
  Status wait(int fd, short events, std::string_view phase) const;
  Status check(std::string_view phase) const;  // the same, without waiting

 private:
  Clock::time_point deadline_;
  int cancel_fd_;  // -1: no canceller
};

// Resolves `url.host` (numeric hosts without DNS) and connects to the first address that accepts.
Result<UniqueFd> connect_tcp(const Url& url, const Waiter& waiter);

// Up to `size` bytes into `buf`; 0 when the peer closed its side.
Result<size_t> recv_some(int fd, char* buf, size_t size, const Waiter& waiter, std::string_view phase);
Status send_all(int fd, std::string_view data, const Waiter& waiter, std::string_view phase);

}  // namespace kgpu::http
