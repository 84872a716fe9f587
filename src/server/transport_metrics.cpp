#include "server/transport_metrics.h"

namespace kgpu::server {

void append_transport_metrics(const rpc::Server& transport, std::string& out) {
  out += "# HELP kgpu_grpc_errors_total Streams reset and connections closed with an error by kgpu's gRPC transport.\n"
         "# TYPE kgpu_grpc_errors_total counter\n";
  for (const auto& c : transport.error_counts()) {
    out += "kgpu_grpc_errors_total{scope=\"";
    out += c.scope == rpc::ErrorScope::Stream ? "stream" : "connection";
    out += "\",code=\"" + c.code + "\"} " + std::to_string(c.value) + "\n";
  }
}

}  // namespace kgpu::server
