#include "http/canceller.h"

#include <poll.h>
#include <sys/eventfd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <algorithm>

namespace kgpu::http {

Result<Canceller> Canceller::create() {
  const int fd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (fd < 0) return Error::internal(std::string("eventfd for cancelling HTTP requests: ") + std::strerror(errno));
  return Canceller(UniqueFd(fd));
}

void Canceller::cancel() const {
  const uint64_t one = 1;
  // Only fails when the counter would overflow, i.e. it is already (very) cancelled.
  [[maybe_unused]] auto written = ::write(fd_.get(), &one, sizeof one);
}

bool Canceller::cancelled() const {
  pollfd p{fd_.get(), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0;
}

bool Canceller::sleep_for(std::chrono::milliseconds delay) const {
  const auto deadline = std::chrono::steady_clock::now() + delay;
  while (true) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd_.get(), POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, std::min<int64_t>(left.count(), INT32_MAX))));
    if (n > 0) return false;
    if (n == 0 && std::chrono::steady_clock::now() >= deadline) return true;
    if (n < 0 && errno != EINTR) return true;  // cannot wait (cannot happen on a valid fd): don't spin
    // EINTR, or poll's rounding woke us a little early: wait for the rest.
  }
}

}  // namespace kgpu::http
