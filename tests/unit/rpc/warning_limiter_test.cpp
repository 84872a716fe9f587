// Which warnings about peers reach the log (issue 39, item 2): a forking flood costs a line a
// minute per cause, another uid's and the kubelet's warnings still get out, and the whole stays
// under the bucket's rate, with what was held back counted.
#include "rpc/warning_limiter.h"

#include <gtest/gtest.h>

#include <string>

namespace kgpu::rpc {
namespace {

using namespace std::chrono_literals;
using Key = WarningLimiter::Key;

TEST(WarningLimiter, AFloodOfOneCauseIsOneLineAMinute) {
  WarningLimiter limiter;
  auto t = WarningLimiter::Clock::now();
  Key key{false, 0, 0, 1, "duplicate pseudo-header"};
  int lines = 0;
  for (int i = 0; i < 25000; ++i) lines += limiter.admit(key, t + i * 1ms).log ? 1 : 0;  // 25 s of a forking flood
  EXPECT_EQ(lines, 1);
  auto later = limiter.admit(key, t + WarningLimiter::kKeyInterval + 1s);
  ASSERT_TRUE(later.log);
  EXPECT_EQ(later.suppressed_like_this, 24999u);
}

TEST(WarningLimiter, OnePeersFloodHidesNeitherAnotherUidNorTheKubelet) {
  WarningLimiter limiter;
  auto t = WarningLimiter::Clock::now();
  // A flood of every cause it can make: the bucket empties.
  for (int i = 0; i < 1000; ++i) limiter.admit({false, 0, 0, 1, "cause " + std::to_string(i)}, t);
  auto kubelet = limiter.admit({true, 0, 0, 1, "cause 1"}, t);
  ASSERT_TRUE(kubelet.log) << "the kubelet's own warning is held back";
  EXPECT_EQ(kubelet.suppressed_others, 1000u - static_cast<uint64_t>(WarningLimiter::kBurst));  // "N more suppressed"
  EXPECT_TRUE(limiter.admit({false, 1000, 0, 1, "cause 1"}, t + 1s).log) << "another uid's warning is hidden";
}

TEST(WarningLimiter, EveryCauseTogetherStaysUnderTheRate) {
  WarningLimiter limiter;
  auto t = WarningLimiter::Clock::now();
  int lines = 0;
  for (int i = 0; i < 100000; ++i)  // 100 s, a new cause every ms
    lines += limiter.admit({false, 0, 0, 1, "cause " + std::to_string(i)}, t + i * 1ms).log ? 1 : 0;
  EXPECT_LE(lines, static_cast<int>(WarningLimiter::kBurst + 100 * WarningLimiter::kPerSecond) + 1);
  EXPECT_GE(lines, 100);
}

}  // namespace
}  // namespace kgpu::rpc
