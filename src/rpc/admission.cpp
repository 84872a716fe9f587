#include "rpc/admission.h"

#include <algorithm>

namespace kgpu::rpc {

bool KubeletPeer::matches(const Peer& p, Clock::time_point accepted_at) const {
  if (p.uid != peer.uid) return false;
  if (peer.pid != 0) return p.pid == peer.pid;
  return p.pid == 0 && accepted_at >= since && accepted_at <= since + kWindow;
}

std::optional<uint64_t> choose_victim(const std::vector<ConnectionView>& open) {
  const ConnectionView* victim = nullptr;
  auto pick = [&](auto&& eligible, auto&& before) {
    if (victim) return;
    for (const auto& c : open)
      if (eligible(c) && (!victim || before(c, *victim))) victim = &c;
  };
  auto older = [](const ConnectionView& a, const ConnectionView& b) { return a.accepted_at < b.accepted_at; };
  auto others = [](const ConnectionView& c) { return !c.kubelet; };
  pick([&](const ConnectionView& c) { return others(c) && !c.handshaken; }, older);
  pick([&](const ConnectionView& c) { return others(c) && c.open_calls == 0; }, older);
  pick([&](const ConnectionView& c) { return others(c) && c.stalled_since.has_value(); },
       [](const ConnectionView& a, const ConnectionView& b) { return *a.stalled_since < *b.stalled_since; });
  if (!victim) {
    std::map<uid_t, size_t> held;
    for (const auto& c : open)
      if (others(c)) ++held[c.peer.uid];
    auto most = std::max_element(held.begin(), held.end(), [](const auto& a, const auto& b) { return a.second < b.second; });
    if (most != held.end())
      pick([&](const ConnectionView& c) { return others(c) && c.peer.uid == most->first; }, older);
  }
  pick([](const ConnectionView&) { return true; }, older);  // only the kubelet's are left
  return victim ? std::optional<uint64_t>(victim->id) : std::nullopt;
}

void PeerLedger::call_closed(const Peer& peer) {
  auto it = calls_.find(peer.uid);
  if (it == calls_.end()) return;
  if (--it->second == 0) calls_.erase(it);
}

size_t PeerLedger::calls(const Peer& peer) const {
  auto it = calls_.find(peer.uid);
  return it == calls_.end() ? 0 : it->second;
}

}  // namespace kgpu::rpc
