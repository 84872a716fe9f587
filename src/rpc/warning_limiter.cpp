#include "rpc/warning_limiter.h"

#include <algorithm>

namespace kgpu::rpc {

void WarningLimiter::forget_old(Clock::time_point now) {
  std::erase_if(seen_, [&](const auto& entry) { return now - entry.second.logged_at >= kKeyInterval; });
  if (seen_.size() >= kMaxKeys) seen_.clear();  // a peer minting causes: memory stays bounded
}

WarningLimiter::Verdict WarningLimiter::admit(const Key& key, Clock::time_point now) {
  if (!started_) {
    started_ = true;
    refilled_at_ = now;
  }
  std::chrono::duration<double> since = now - refilled_at_;
  tokens_ = std::min(kBurst, tokens_ + since.count() * kPerSecond);
  refilled_at_ = now;

  auto it = seen_.find(key);
  if (it != seen_.end() && now - it->second.logged_at < kKeyInterval) {
    ++it->second.suppressed;
    return {};
  }
  if (!key.kubelet && tokens_ < 1) {
    ++held_back_;
    if (it != seen_.end()) ++it->second.suppressed;
    return {};
  }
  if (tokens_ >= 1) tokens_ -= 1;
  Verdict v{true, it != seen_.end() ? it->second.suppressed : 0, held_back_};
  held_back_ = 0;
  if (it == seen_.end()) {
    if (seen_.size() >= kMaxKeys) forget_old(now);
    seen_[key] = Seen{now, 0};
  } else {
    it->second = Seen{now, 0};
  }
  return v;
}

}  // namespace kgpu::rpc
