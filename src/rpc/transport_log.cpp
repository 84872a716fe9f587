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

void TransportLog::record(const Peer& peer, const TransportError& error) {
  auto& slots = error.scope == ErrorScope::Stream ? streams_ : connections_;
  slots[std::min<size_t>(error.code, kCodes)].fetch_add(1, std::memory_order_relaxed);

  constexpr size_t kMaxWarned = 1024;
  if (warned_.size() >= kMaxWarned) warned_.clear();
  auto key = std::make_tuple(peer.pid, static_cast<int>(error.scope), error.code, std::string(error.cause));
  if (!warned_.insert(std::move(key)).second) return;
  const char* what = error.scope == ErrorScope::Stream ? "reset a stream of" : "closed the connection of";
  spdlog::warn("gRPC: {} peer pid {} (uid {}) with {}: {}{}{} [method {}, :authority {}]; further ones of this "
               "cause from this peer are only counted (kgpu_grpc_errors_total)",
               what, peer.pid, peer.uid, http2_error_name(error.code), error.cause, error.detail.empty() ? "" : ": ",
               printable(error.detail), error.method.empty() ? "unknown" : printable(error.method),
               error.authority.empty() ? "none" : "\"" + printable(error.authority) + "\"");
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
