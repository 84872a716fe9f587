#pragma once
// The optional HTTP endpoint for operators and probes, started only when --metrics-addr is set:
//   GET /metrics  Prometheus text format (Metrics::render)
//   GET /healthz  200 while the process serves HTTP (liveness)
//   GET /readyz   200 when the readiness predicate holds (every resource registered), else 503
// Built on cpp-httplib (Debian's libcpp-httplib), so no HTTP parsing lives in kgpu. The server adds
// two threads (accept + one worker) and no idle timer: it sleeps in accept() until a request arrives.
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"
#include "metrics/metrics.h"

namespace kgpu {

struct ListenAddress {
  std::string host;  // "0.0.0.0" for ":9400"; IPv6 literals without brackets
  int port = 0;      // 0: an ephemeral port (tests)
};

// Parses "host:port", ":port" (all interfaces) and "[v6]:port".
Result<ListenAddress> parse_listen_address(std::string_view addr);

class MetricsServer {
 public:
  using ReadyFn = std::function<bool()>;

  // Binds and starts serving in a background thread. `metrics` must outlive the server; `ready`
  // is called on every /readyz request from a server thread (a null predicate means always ready).
  static Result<std::unique_ptr<MetricsServer>> start(const std::string& addr, const Metrics& metrics,
                                                       ReadyFn ready);
  ~MetricsServer();  // stops
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Stops accepting, finishes in-flight requests and joins the thread. Idempotent.
  void stop();
  int port() const;  // the bound port (the ephemeral one when started with port 0)
  const std::string& host() const;

  struct Impl;  // public only so the .cpp's helpers can name it

 private:
  explicit MetricsServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kgpu
