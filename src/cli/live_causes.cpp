#include "cli/live_causes.h"

#include "http/client.h"
#include "metrics/device_causes.h"
#include "metrics/metrics_server.h"

namespace kgpu::cli {

Result<std::vector<DeviceCause>> fetch_device_causes(const std::string& metrics_addr,
                                                     std::chrono::milliseconds timeout) {
  auto listen = parse_listen_address(metrics_addr);
  if (!listen) return listen.error();
  http::Request req;
  // A wildcard bind is reached on loopback: `kubectl exec` runs in the plugin's own network namespace.
  req.url.host = listen->host == "0.0.0.0" ? "127.0.0.1" : listen->host == "::" ? "::1" : listen->host;
  req.url.port = static_cast<uint16_t>(listen->port);
  req.target = "/metrics";
  req.deadline = std::chrono::steady_clock::now() + timeout;
  req.max_body = 8 * 1024 * 1024;
  auto res = http::request(req);
  if (!res) return res.error();
  if (res->status != 200)
    return Error::unavailable("GET " + req.url.to_string() + "/metrics answered " + std::to_string(res->status));
  return parse_device_causes(res->body);
}

}  // namespace kgpu::cli
