#pragma once
// The optional HTTP endpoint for operators and probes, started only when --metrics-addr is set:
//   GET /metrics  Prometheus text format (Metrics::render)
//   GET /healthz  200 while the process serves HTTP (liveness)
//   GET /readyz   200 when the readiness check finds nothing missing, else 503 with its reasons
//                 (a resource not registered yet, a resource withheld and why: Metrics::not_ready_reason)
// One thread serves every connection with non-blocking sockets and poll(): connections are
// concurrent, each has a total deadline (accept to last byte, not reset by each byte a slow
// client trickles), their number is bounded (the oldest is dropped for a new one, so stalled
// clients cannot lock a probe out), and stop() is immediate whatever the clients do. No idle
// timer: poll() sleeps without a timeout while no connection is open.
#include <chrono>
#include <cstddef>
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
  // Empty when ready; otherwise the reasons (full lines) /readyz answers with its 503.
  using ReadyFn = std::function<std::string()>;

  // Binds and starts serving in a background thread. `metrics` must outlive the server; `ready`
  // is called on every /readyz request from a server thread and must not throw (a null check
  // means always ready).
  static Result<std::unique_ptr<MetricsServer>> start(const std::string& addr, const Metrics& metrics,
                                                       ReadyFn ready);

  static constexpr size_t kMaxConnections = 32;
  static constexpr size_t kMaxRequestHead = 8192;
  static constexpr std::chrono::milliseconds kRequestDeadline{2000};
  ~MetricsServer();  // stops
  MetricsServer(const MetricsServer&) = delete;
  MetricsServer& operator=(const MetricsServer&) = delete;

  // Stops at once (open connections are closed) and joins the thread. Idempotent.
  void stop();
  int port() const;  // the bound port (the ephemeral one when started with port 0)
  const std::string& host() const;

  struct Impl;  // public only so the .cpp's helpers can name it

 private:
  explicit MetricsServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kgpu
