#pragma once
// What the transport refuses a peer: a stream it resets or a connection it closes with an error.
// Each is counted by scope and HTTP/2 error code (for /metrics) and logged as a warning, rate-limited
// by WarningLimiter (per uid, kubelet or not, and cause; one bucket for the process), with the
// method and `:authority`: a kubelet whose gRPC cannot talk to kgpu must show up in the log and the
// metrics, not only as a node with zero GPUs, and no peer may flood the log or hide another's.
#include <sys/types.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "rpc/warning_limiter.h"

namespace kgpu::rpc {

// The process at the other end of a unix socket (SO_PEERCRED); zeros when unknown.
struct Peer {
  pid_t pid = 0;
  uid_t uid = 0;
};
Peer peer_of(int fd);

enum class ErrorScope { Stream, Connection };

struct TransportError {
  ErrorScope scope = ErrorScope::Stream;
  uint32_t code = 0;       // HTTP/2 error code sent (RST_STREAM or GOAWAY); 0 for a bare close
  std::string_view cause;  // a fixed phrase: what went wrong, for once-per-cause logging
  std::string_view detail;
  std::string_view method;     // :path, empty when unknown
  std::string_view authority;  // as the peer sent it
};

// "PROTOCOL_ERROR"; "ERROR_<n>" beyond RFC 9113's codes.
std::string http2_error_name(uint32_t code);

class TransportLog {
 public:
  // The serving thread only. `kubelet`: the peer owns kubelet.sock.
  void record(const Peer& peer, bool kubelet, const TransportError& error,
              WarningLimiter::Clock::time_point now = WarningLimiter::Clock::now());

  static constexpr size_t kMaxLine = 640;  // bytes of one warning, at most

  struct Count {
    ErrorScope scope;
    std::string code;
    uint64_t value;
  };
  // Non-zero counts; any thread.
  std::vector<Count> counts() const;

  static constexpr size_t kCodes = 14;  // NO_ERROR .. HTTP_1_1_REQUIRED; later codes share one slot

 private:
  std::array<std::atomic<uint64_t>, kCodes + 1> streams_{};
  std::array<std::atomic<uint64_t>, kCodes + 1> connections_{};
  WarningLimiter limiter_;
};

}  // namespace kgpu::rpc
