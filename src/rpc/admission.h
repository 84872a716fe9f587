#pragma once
// Who may hold the gRPC server's connections and calls (issue 39). Pure logic, no I/O: the server
// feeds it what SO_PEERCRED says about each peer and asks it which connection to give up.
//
// The kubelet must always get in, whatever other local peers hold. So there is no slot a call can
// keep for good: when a socket is full a newcomer displaces the worst offender (never the
// kubelet), calls are bounded per peer uid, and a request that never ends is timed out.
//
// Peers are keyed by uid, not pid: a peer mints pids by forking, and in a pod without hostPID
// every peer outside kgpu's pid namespace (the kubelet included) reads pid 0. The kubelet is
// learnt when kgpu registers (SO_PEERCRED of the connection to kubelet.sock): a visible pid names
// that process; pid 0 can only say "this uid, connected since the registration began".
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <vector>

#include "rpc/transport_log.h"

namespace kgpu::rpc {

using Clock = std::chrono::steady_clock;

// The process that owns kubelet.sock, as kgpu's registration connection saw it.
struct KubeletPeer {
  Peer peer;
  Clock::time_point since;  // when the registration that learnt it began
  // A connection from outside our pid namespace counts as the kubelet's only if it came this soon
  // after a registration began: the kubelet dials a plugin as it accepts Register.
  static constexpr std::chrono::seconds kWindow{30};
  bool matches(const Peer& p, Clock::time_point accepted_at) const;
};

// One open connection as the displacement policy sees it.
struct ConnectionView {
  uint64_t id = 0;
  Peer peer;
  bool kubelet = false;
  bool handshaken = false;
  size_t open_calls = 0;
  std::optional<Clock::time_point> stalled_since;  // its oldest request still arriving
  Clock::time_point accepted_at;
};

// The connection to close so that a newcomer fits, worst offender first: one that never completed
// its handshake, else one with no call open, else one with a request still arriving (the oldest),
// else the oldest of the uid holding the most connections. The kubelet's connections are given up
// only when nothing else is left (the oldest first). None only when `open` is empty.
std::optional<uint64_t> choose_victim(const std::vector<ConnectionView>& open);

// Calls open per peer uid, and who the kubelet is; the server's thread only.
class PeerLedger {
 public:
  // Open calls one uid may hold on every socket together; the kubelet is not counted against it.
  static constexpr size_t kMaxCallsPerPeer = 256;

  void set_kubelet(const Peer& peer, Clock::time_point since) { kubelet_ = KubeletPeer{peer, since}; }
  const std::optional<KubeletPeer>& kubelet() const { return kubelet_; }
  bool is_kubelet(const Peer& peer, Clock::time_point accepted_at) const {
    return kubelet_ && kubelet_->matches(peer, accepted_at);
  }
  bool may_open_call(const Peer& peer, bool kubelet) const { return kubelet || calls(peer) < kMaxCallsPerPeer; }
  void call_opened(const Peer& peer) { ++calls_[peer.uid]; }
  void call_closed(const Peer& peer);
  size_t calls(const Peer& peer) const;
  bool empty() const { return calls_.empty(); }

 private:
  std::optional<KubeletPeer> kubelet_;
  std::map<uid_t, size_t> calls_;
};

}  // namespace kgpu::rpc
