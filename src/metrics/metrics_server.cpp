#include "metrics/metrics_server.h"

#include <httplib.h>
#include <sys/socket.h>

#include <atomic>
#include <charconv>
#include <thread>

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

struct MetricsServer::Impl {
  httplib::Server http;
  std::thread thread;
  std::atomic<bool> loop_exited{false};
  std::string host;
  int port = 0;
};

MetricsServer::MetricsServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

MetricsServer::~MetricsServer() { stop(); }

Result<std::unique_ptr<MetricsServer>> MetricsServer::start(const std::string& addr, const Metrics& metrics,
                                                             ReadyFn ready) {
  auto parsed = parse_listen_address(addr);
  if (!parsed) return parsed.error();

  auto impl = std::make_unique<Impl>();
  auto& http = impl->http;
  // Scrapes and probes are rare and tiny, and the daemon's thread budget is small: one worker
  // (plus the accept thread). Short timeouts bound how long a stalled client can hold it.
  http.new_task_queue = [] { return new httplib::ThreadPool(1); };
  http.set_read_timeout(2, 0);
  http.set_write_timeout(2, 0);
  // No idle timer: the accept loop sleeps until a connection arrives (kgpu has no periodic wake-ups).
  http.set_idle_interval(0, 0);
  // httplib's default sets SO_REUSEPORT, which would let a second daemon (a stale pod on a
  // hostNetwork node) silently share the port; SO_REUSEADDR alone allows quick restarts only.
  http.set_socket_options([](int sock) {
    int yes = 1;
    ::setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
  });
  // One request per connection, so an idle keep-alive scraper cannot pin a worker.
  http.set_keep_alive_max_count(1);

  http.Get("/metrics", [&metrics](const httplib::Request&, httplib::Response& res) {
    res.set_content(metrics.render(), "text/plain; version=0.0.4; charset=utf-8");
  });
  http.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok\n", "text/plain; charset=utf-8");
  });
  http.Get("/readyz", [ready = std::move(ready)](const httplib::Request&, httplib::Response& res) {
    const bool is_ready = !ready || ready();
    res.status = is_ready ? 200 : 503;
    res.set_content(is_ready ? "ok\n" : "not ready: not every resource is registered with the kubelet\n",
                    "text/plain; charset=utf-8");
  });

  const auto& [host, port] = parsed.value();
  if (port == 0) {
    const int bound = http.bind_to_any_port(host);
    if (bound < 0) return Error::unavailable("metrics: cannot bind " + host + " on an ephemeral port");
    impl->port = bound;
  } else {
    if (!http.bind_to_port(host, port)) return Error::unavailable("metrics: cannot bind " + addr);
    impl->port = port;
  }
  impl->host = host;

  Impl* raw = impl.get();
  impl->thread = std::thread([raw] {
    raw->http.listen_after_bind();
    raw->loop_exited.store(true);
  });
  // httplib's stop() only acts once the accept loop has marked itself running; wait for that
  // (microseconds) so that a stop() right after start() cannot be lost and hang the join.
  while (!raw->http.is_running() && !raw->loop_exited.load()) std::this_thread::yield();
  if (raw->loop_exited.load()) {
    raw->thread.join();
    return Error::unavailable("metrics: server on " + addr + " stopped right after starting");
  }
  return std::unique_ptr<MetricsServer>(new MetricsServer(std::move(impl)));
}

void MetricsServer::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  impl_->http.stop();
  impl_->thread.join();
}

int MetricsServer::port() const { return impl_->port; }
const std::string& MetricsServer::host() const { return impl_->host; }

}  // namespace kgpu
