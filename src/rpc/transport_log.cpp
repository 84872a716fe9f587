#include "rpc/transport_log.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>

#include "rpc/request_head.h"

namespace kgpu::rpc {

Peer peer_of(int fd) {
  ucred cred{};
  socklen_t len = sizeof(cred);
  if (::getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) return {};
  return {cred.pid, cred.uid};
}

std::string http2_error_name(uint32_t code) {
  static constexpr std::array<const char*, TransportLog::kCodes> kNames = {
      "NO_ERROR",       "PROTOCOL_ERROR",      "INTERNAL_ERROR",      "FLOW_CONTROL_ERROR", "SETTINGS_TIMEOUT",
      "STREAM_CLOSED",  "FRAME_SIZE_ERROR",    "REFUSED_STREAM",      "CANCEL",             "COMPRESSION_ERROR",
      "CONNECT_ERROR",  "ENHANCE_YOUR_CALM",   "INADEQUATE_SECURITY", "HTTP_1_1_REQUIRED"};
  return code < kNames.size() ? kNames[code] : "ERROR_" + std::to_string(code);
}

void TransportLog::record(const Peer& peer, bool kubelet, const TransportError& error,
                          WarningLimiter::Clock::time_point now) {
  auto& slots = error.scope == ErrorScope::Stream ? streams_ : connections_;
  slots[std::min<size_t>(error.code, kCodes)].fetch_add(1, std::memory_order_relaxed);

  auto verdict = limiter_.admit({kubelet, peer.uid, static_cast<int>(error.scope), error.code,
                                 std::string(error.cause.substr(0, 64))},
                                now);
  if (!verdict.log) return;
  if (verdict.suppressed_others > 0)
    spdlog::warn("gRPC: {} more warnings about peers suppressed (kgpu_grpc_errors_total counts them all)",
                 verdict.suppressed_others);
  const char* what = error.scope == ErrorScope::Stream ? "reset a stream of" : "closed the connection of";
  std::string line = fmt::format(
      "gRPC: {} peer pid {} (uid {}{}) with {}: {}{}{} [method {}, :authority {}]", what, peer.pid, peer.uid,
      kubelet ? ", the kubelet" : "", http2_error_name(error.code), printable(error.cause, 64),
      error.detail.empty() ? "" : ": ", printable(error.detail, 200),
      error.method.empty() ? "unknown" : printable(error.method, 96),
      error.authority.empty() ? "none" : "\"" + printable(error.authority, 96) + "\"");
  if (line.size() > kMaxLine) line.resize(kMaxLine);
  if (verdict.suppressed_like_this > 0)
    line += fmt::format("; {} more like it suppressed", verdict.suppressed_like_this);
  spdlog::warn("{}; at most one a minute per uid and cause is logged, every one is counted (kgpu_grpc_errors_total)",
               line);
}

std::vector<TransportLog::Count> TransportLog::counts() const {
  std::vector<Count> out;
  for (auto scope : {ErrorScope::Stream, ErrorScope::Connection}) {
    const auto& slots = scope == ErrorScope::Stream ? streams_ : connections_;
    for (size_t code = 0; code < slots.size(); ++code) {
      uint64_t v = slots[code].load(std::memory_order_relaxed);
      if (v > 0) out.push_back({scope, code < kCodes ? http2_error_name(static_cast<uint32_t>(code)) : "OTHER", v});
    }
  }
  return out;
}

}  // namespace kgpu::rpc
