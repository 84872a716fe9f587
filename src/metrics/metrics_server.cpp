#include "metrics/metrics_server.h"

#include <netdb.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <list>
#include <thread>
#include <vector>

#include "core/thread_name.h"
#include "core/unique_fd.h"
#include "metrics/http_exchange.h"

namespace kgpu {

Result<ListenAddress> parse_listen_address(std::string_view addr) {
  const auto colon = addr.rfind(':');
  if (colon == std::string_view::npos) {
    return Error::invalid("metrics address '" + std::string(addr) + "' must be host:port");
  }
  std::string_view host = addr.substr(0, colon);
  const std::string_view port_text = addr.substr(colon + 1);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  } else if (host.find(':') != std::string_view::npos) {
    return Error::invalid("metrics address '" + std::string(addr) +
                          "': write IPv6 hosts in brackets, e.g. [::1]:9400");
  }
  int port = -1;
  const auto [end, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (port_text.empty() || ec != std::errc{} || end != port_text.data() + port_text.size() || port < 0 ||
      port > 65535) {
    return Error::invalid("metrics address '" + std::string(addr) + "': port must be 0-65535");
  }
  return ListenAddress{host.empty() ? std::string("0.0.0.0") : std::string(host), port};
}

namespace {

using Clock = std::chrono::steady_clock;

// The listening socket for host:port (a numeric address or a name), non-blocking.
Result<UniqueFd> listen_on(const ListenAddress& a, int* bound_port) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  addrinfo* found = nullptr;
  const std::string port = std::to_string(a.port);
  if (int rc = ::getaddrinfo(a.host.c_str(), port.c_str(), &hints, &found); rc != 0)
    return Error::unavailable("metrics: cannot resolve " + a.host + ": " + ::gai_strerror(rc));
  std::string why = "no address";
  UniqueFd fd;
  for (addrinfo* ai = found; ai; ai = ai->ai_next) {
    UniqueFd s(::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol));
    if (!s.valid()) {
      why = std::strerror(errno);
      continue;
    }
    // SO_REUSEADDR for quick restarts; never SO_REUSEPORT, which would let a second daemon (a
    // stale pod on a hostNetwork node) silently share the port.
    int yes = 1;
    ::setsockopt(s.get(), SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    if (::bind(s.get(), ai->ai_addr, ai->ai_addrlen) != 0 || ::listen(s.get(), 64) != 0) {
      why = std::strerror(errno);
      continue;
    }
    fd = std::move(s);
    break;
  }
  ::freeaddrinfo(found);
  if (!fd.valid()) return Error::unavailable("metrics: cannot listen on " + a.host + ":" + port + ": " + why);
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
  *bound_port = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                         : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
  return fd;
}

// One client connection: reading its request head, then writing the response, then (having
// shut down our side) reading until the client closes, so that unread bytes of its request do
// not turn our close into a reset that loses the response. All within one deadline, and at most
// kMaxDiscarded bytes read past the answer: a client streaming an endless body is closed then,
// not read for the rest of the deadline at a core's worth of CPU (issue 39).
struct Connection {
  UniqueFd fd;
  Clock::time_point deadline;
  std::string in;
  std::string out;
  size_t sent = 0;
  bool answered = false;  // `out` holds the whole response
  bool draining = false;  // response sent, our side shut down
  size_t discarded = 0;   // bytes read after the answer was ready (a body nobody needs)
};

constexpr size_t kMaxDiscarded = 64 * 1024;

}  // namespace

struct MetricsServer::Impl {
  const Metrics* metrics = nullptr;
  ReadyFn ready;
  UniqueFd listener, wake;
  std::thread thread;
  std::string host;
  int port = 0;
  std::list<Connection> connections;
  Clock::time_point listener_paused_until{};  // out of file descriptors: retry accepting then

  std::string answer(std::string_view head) {
    auto line = http::parse_request_line(head);
    if (!line) return http::response(400, "text/plain; charset=utf-8", line.error().message + "\n");
    if (line->method != "GET" && line->method != "HEAD")
      return http::response(405, "text/plain; charset=utf-8", "only GET\n");
    std::string out;
    if (line->path == "/metrics") {
      out = http::response(200, "text/plain; version=0.0.4; charset=utf-8", metrics->render());
    } else if (line->path == "/healthz") {
      out = http::response(200, "text/plain; charset=utf-8", "ok\n");
    } else if (line->path == "/readyz") {
      const std::string why = ready ? ready() : std::string();
      out = http::response(why.empty() ? 200 : 503, "text/plain; charset=utf-8", why.empty() ? "ok\n" : why);
    } else {
      out = http::response(404, "text/plain; charset=utf-8", "not found\n");
    }
    if (line->method == "HEAD") out.resize(out.find("\r\n\r\n") + 4);
    return out;
  }

  void drop_oldest() {
    // The oldest connection is the one most likely stalled; a new client (a probe) wins.
    auto oldest = std::min_element(connections.begin(), connections.end(),
                                   [](const auto& a, const auto& b) { return a.deadline < b.deadline; });
    if (oldest != connections.end()) connections.erase(oldest);
  }

  void accept_all() {
    while (true) {
      int fd = ::accept4(listener.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) {
        if (errno == EINTR) continue;
        if ((errno == EMFILE || errno == ENFILE) && !connections.empty()) {
          drop_oldest();  // frees a descriptor for the waiting client
          continue;
        }
        // Out of descriptors with none of ours to give back: leave the listener alone for a
        // moment rather than spin on a readable socket we cannot accept from.
        if (errno == EMFILE || errno == ENFILE) listener_paused_until = Clock::now() + std::chrono::milliseconds(100);
        return;  // EAGAIN: none left
      }
      if (connections.size() >= kMaxConnections) drop_oldest();
      connections.push_back(Connection{UniqueFd(fd), Clock::now() + kRequestDeadline, {}, {}, 0, false, false, 0});
    }
  }

  // Advances one connection; false when it is finished (to be closed).
  bool progress(Connection& c, short revents) {
    if (revents & POLLIN) {
      char buf[4096];
      while (true) {
        ssize_t n = ::recv(c.fd.get(), buf, sizeof buf, 0);
        if (n == 0) return false;  // the client closed (or finished reading our answer)
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK) break;
          if (errno == EINTR) continue;
          return false;
        }
        if (c.answered) {  // the rest of a request (a body): not needed
          c.discarded += static_cast<size_t>(n);
          if (c.discarded > kMaxDiscarded) return false;
          continue;
        }
        c.in.append(buf, static_cast<size_t>(n));
        auto len = http::head_length(c.in);
        if (len && *len <= kMaxRequestHead) {
          c.out = answer(std::string_view(c.in).substr(0, *len));
          c.answered = true;
        } else if (len || c.in.size() > kMaxRequestHead) {
          c.out = http::response(431, "text/plain; charset=utf-8", "request head too large\n");
          c.answered = true;
        }
      }
    }
    if ((revents & (POLLERR | POLLHUP)) && !(revents & POLLIN)) return false;
    if (c.answered && !c.draining) {
      while (c.sent < c.out.size()) {
        ssize_t n = ::send(c.fd.get(), c.out.data() + c.sent, c.out.size() - c.sent, MSG_NOSIGNAL);
        if (n < 0) {
          if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
          if (errno == EINTR) continue;
          return false;
        }
        c.sent += static_cast<size_t>(n);
      }
      ::shutdown(c.fd.get(), SHUT_WR);
      c.draining = true;
      c.in.clear();
      c.out.clear();
    }
    return true;
  }

  void run() {
    std::vector<pollfd> fds;
    std::vector<std::list<Connection>::iterator> order;
    while (true) {
      auto now = Clock::now();
      const bool paused = now < listener_paused_until;
      fds.assign({{wake.get(), POLLIN, 0}, {paused ? -1 : listener.get(), POLLIN, 0}});
      order.clear();
      int timeout = -1;  // nothing open: sleep until a client or stop()
      if (paused)
        timeout = static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(listener_paused_until - now).count());
      for (auto it = connections.begin(); it != connections.end(); ++it) {
        short events = (it->answered && !it->draining) ? POLLOUT : POLLIN;
        fds.push_back({it->fd.get(), events, 0});
        order.push_back(it);
        auto left = std::chrono::ceil<std::chrono::milliseconds>(it->deadline - now).count();
        timeout = timeout < 0 ? static_cast<int>(std::max<int64_t>(left, 0))
                              : std::min(timeout, static_cast<int>(std::max<int64_t>(left, 0)));
      }
      int n = ::poll(fds.data(), fds.size(), timeout);
      if (n < 0 && errno != EINTR) return;
      if (fds[0].revents & POLLIN) return;  // stop()
      now = Clock::now();
      for (size_t i = 0; i < order.size(); ++i) {
        auto it = order[i];
        bool keep = fds[i + 2].revents == 0 || progress(*it, fds[i + 2].revents);
        if (!keep || Clock::now() >= it->deadline) connections.erase(it);
      }
      if (fds[1].revents & POLLIN) accept_all();
    }
  }
};

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsServer::~MetricsServer() { stop(); }

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string& addr, const Metrics& metrics,
                                                             ReadyFn ready) {
  auto parsed = parse_listen_address(addr);
  if (!parsed) return parsed.error();
  auto impl = std::make_unique<Impl>();
  impl->metrics = &metrics;
  impl->ready = std::move(ready);
  auto listener = listen_on(*parsed, &impl->port);
  if (!listener) return Error::unavailable(listener.error().message + " (address " + addr + ")");
  impl->listener = std::move(*listener);
  impl->wake.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!impl->wake.valid()) return Error::unavailable(std::string("metrics: eventfd: ") + std::strerror(errno));
  impl->host = parsed->host;
  Impl* raw = impl.get();
  // The HTTP thread: accepts and answers every connection (see the header).
  impl->thread = std::thread([raw] {
    name_this_thread("kgpu-metrics");  // /metrics and /healthz, one poll() loop
    raw->run();
  });
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

void MetricsServer::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(impl_->wake.get(), &one, sizeof one);
  impl_->thread.join();
  impl_->connections.clear();
  impl_->listener.reset();
}

int MetricsServer::port() const { return impl_->port; }
const std::string& MetricsServer::host() const { return impl_->host; }

}  // namespace kgpu
