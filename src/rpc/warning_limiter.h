#pragma once
// Which warnings about peers reach the log (issue 39). Pure: the caller passes the time.
//
// A peer can make kgpu refuse it as often as it likes, and forking mints a fresh pid each time,
// so nothing here keys on pids. A warning is keyed by what cannot be minted without privilege:
// the peer's uid, whether it is the kubelet, and the cause. Each key is logged at most once per
// kKeyInterval (the first at once); every line, kubelet's aside, takes a token from one bucket
// for the process (kBurst, refilled at kPerSecond); what is held back is counted and reported on
// the next line that gets out ("N more ... suppressed"). So one peer's flood costs at most
// kPerSecond lines a second and can hide neither another uid's warnings nor the kubelet's.
#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <tuple>

namespace kgpu::rpc {

class WarningLimiter {
 public:
  using Clock = std::chrono::steady_clock;
  static constexpr double kBurst = 20;
  static constexpr double kPerSecond = 2;
  static constexpr std::chrono::seconds kKeyInterval{60};
  static constexpr size_t kMaxKeys = 1024;  // keys remembered; older ones are forgotten first

  struct Key {
    bool kubelet = false;
    uid_t uid = 0;
    int scope = 0;
    uint32_t code = 0;
    std::string cause;
    auto operator<=>(const Key&) const = default;
  };
  struct Verdict {
    bool log = false;
    uint64_t suppressed_like_this = 0;  // of this key, since its last line
    uint64_t suppressed_others = 0;     // of other keys held back by the bucket since the last line
  };

  Verdict admit(const Key& key, Clock::time_point now);

 private:
  struct Seen {
    Clock::time_point logged_at;
    uint64_t suppressed = 0;
  };
  void forget_old(Clock::time_point now);

  std::map<Key, Seen> seen_;
  double tokens_ = kBurst;
  bool started_ = false;
  Clock::time_point refilled_at_{};
  uint64_t held_back_ = 0;  // by the bucket, since the last line out
};

}  // namespace kgpu::rpc
