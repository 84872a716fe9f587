#include "http/socket.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>

namespace kgpu::http {

namespace {

std::string errno_text(int err) { return std::strerror(err); }

}  // namespace

Status Waiter::check(std::string_view phase) const {
  if (cancel_fd_ >= 0) {
    pollfd p{cancel_fd_, POLLIN, 0};
    if (::poll(&p, 1, 0) > 0) return Error::unavailable("cancelled while " + std::string(phase));
  }
  if (Clock::now() >= deadline_) return Error::unavailable("deadline passed while " + std::string(phase));
  return ok_status();
}

Status Waiter::wait(int fd, short events, std::string_view phase) const {
  while (true) {
    if (auto ok = check(phase); !ok) return ok;
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline_ - Clock::now()).count();
    pollfd fds[2] = {{fd, events, 0}, {cancel_fd_, POLLIN, 0}};
    const int n = ::poll(fds, cancel_fd_ >= 0 ? 2 : 1, static_cast<int>(std::clamp<int64_t>(left, 0, INT32_MAX)));
    if (n < 0 && errno != EINTR) return Error::internal("poll while " + std::string(phase) + ": " + errno_text(errno));
    if (n > 0 && fds[1].revents != 0) continue;  // check() names the cancellation
    if (n > 0 && fds[0].revents != 0) return ok_status();
  }
}

Result<UniqueFd> connect_tcp(const Url& url, const Waiter& waiter) {
  const std::string phase = "connecting to " + url.authority();
  if (auto ok = waiter.check(phase); !ok) return ok.error();  // cancelled or late already: no DNS, no connect
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_NUMERICSERV | (is_ip_literal(url.host) ? AI_NUMERICHOST : 0);
  addrinfo* found = nullptr;
  const std::string port = std::to_string(url.port);
  if (int rc = ::getaddrinfo(url.host.c_str(), port.c_str(), &hints, &found); rc != 0)
    return Error::unavailable("cannot resolve '" + url.host + "': " + ::gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> addresses(found, ::freeaddrinfo);

  std::string failures;
  for (const addrinfo* a = found; a != nullptr; a = a->ai_next) {
    UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, a->ai_protocol));
    int err = 0;
    if (!fd.valid()) {
      err = errno;
    } else if (::connect(fd.get(), a->ai_addr, a->ai_addrlen) != 0) {
      err = errno;
      if (err == EINPROGRESS) {
        if (auto ready = waiter.wait(fd.get(), POLLOUT, phase); !ready)
          return ready.error();
        socklen_t len = sizeof err;
        if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
      }
    }
    if (err == 0) {
      const int one = 1;  // the request goes out in one or two writes; don't hold them back
      ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    if (!failures.empty()) failures += "; ";
    failures += errno_text(err);
  }
  return Error::unavailable("cannot connect to " + url.authority() + ": " + failures);
}

Result<size_t> recv_some(int fd, char* buf, size_t size, const Waiter& waiter, std::string_view phase) {
  while (true) {
    if (auto ok = waiter.check(phase); !ok) return ok.error();
    const ssize_t n = ::recv(fd, buf, size, 0);
    if (n >= 0) return static_cast<size_t>(n);
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return Error::unavailable("receiving while " + std::string(phase) + ": " + errno_text(errno));
    if (auto ready = waiter.wait(fd, POLLIN, phase); !ready) return ready.error();
  }
}

Status send_all(int fd, std::string_view data, const Waiter& waiter, std::string_view phase) {
  while (!data.empty()) {
    if (auto ok = waiter.check(phase); !ok) return ok;
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n >= 0) {
      data.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK)
      return Error::unavailable("sending while " + std::string(phase) + ": " + errno_text(errno));
    if (auto ready = waiter.wait(fd, POLLOUT, phase); !ready) return ready;
  }
  return ok_status();
}

}  // namespace kgpu::http
