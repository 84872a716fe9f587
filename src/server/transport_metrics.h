#pragma once
// /metrics family for what the gRPC transport refused its peers (rpc::TransportLog):
//   kgpu_grpc_errors_total{scope="stream|connection",code="<HTTP/2 error>"}  counter
// A kubelet that cannot talk to kgpu shows here as a rising PROTOCOL_ERROR count.
#include <string>

#include "rpc/server.h"

namespace kgpu::server {

void append_transport_metrics(const rpc::Server& transport, std::string& out);

}  // namespace kgpu::server
