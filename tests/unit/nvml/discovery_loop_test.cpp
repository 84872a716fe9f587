#include "nvml/discovery_loop.h"

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "support/eventually.h"
#include "unit/nvml/fake_fleet.h"

namespace kgpu {
namespace {

using namespace std::chrono_literals;
using ::testing::HasSubstr;

using test::eventually;

struct Found {
  std::mutex mu;
  std::condition_variable cv;
  std::optional<NvidiaDiscovery> value;
  NvidiaDiscoveryLoop::Callback callback() {
    return [this](NvidiaDiscovery d) {
      std::lock_guard lock(mu);
      value = std::move(d);
      cv.notify_all();
    };
  }
  bool wait(std::chrono::milliseconds timeout = 5s) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, timeout, [&] { return value.has_value(); });
  }
};

TEST(LoadAndDiscover, MissingDriverIsAClearError) {
  testing::TempDir root;
  auto r = load_and_discover(root.path(), {});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr(root.path() + "/usr/lib64/libnvidia-ml.so.1 (not present)"));
}

TEST(NvidiaDiscoveryLoop, RetriesWithBackoffWhileNvmlIsAbsent) {
  testing::TempDir root;
  DiscoveryLoopOptions o;
  o.driver_root = root.path();
  o.initial_backoff = 2ms;
  o.max_backoff = 8ms;
  Found found;
  NvidiaDiscoveryLoop loop(o, found.callback());
  ASSERT_TRUE(loop.start().ok());
  ASSERT_TRUE(eventually([&] { return loop.attempts() >= 4; }));
  EXPECT_THAT(loop.last_error(), HasSubstr("cannot load the NVIDIA management library"));
  loop.stop();
  EXPECT_FALSE(found.value.has_value());
}

TEST(NvidiaDiscoveryLoop, PicksUpADriverThatAppearsLaterWithoutWaitingOutTheBackoff) {
  testing::TempDir root;
  ::setenv("KGPU_FAKE_NVML_FLEET", testing::fleet_path("pcie-t4x2.yaml").c_str(), 1);
  ::unsetenv("KGPU_FAKE_NVML_CONTROL");
  std::filesystem::create_directories(root.path() + "/usr/lib64");
  DiscoveryLoopOptions o;
  o.driver_root = root.path();
  o.initial_backoff = std::chrono::minutes(10);  // only the inotify wake-up can make it in time
  o.max_backoff = std::chrono::minutes(10);
  Found found;
  NvidiaDiscoveryLoop loop(o, found.callback());
  ASSERT_TRUE(loop.start().ok());
  ASSERT_TRUE(eventually([&] { return loop.attempts() >= 1 && !loop.last_error().empty(); }));
  std::filesystem::create_symlink(testing::fake_library_path(), root.path() + "/usr/lib64/libnvidia-ml.so.1");
  ASSERT_TRUE(found.wait());
  EXPECT_EQ(found.value->inventory.gpus.size(), 2u);
  ASSERT_NE(found.value->nvml, nullptr);
  EXPECT_EQ(found.value->nvml->path(), root.path() + "/usr/lib64/libnvidia-ml.so.1");
  loop.stop();
}

TEST(NvidiaDiscoveryLoop, RetryNowAndStopInterruptTheWait) {
  testing::TempDir root;
  DiscoveryLoopOptions o;
  o.driver_root = root.path();
  o.initial_backoff = std::chrono::minutes(10);
  Found found;
  NvidiaDiscoveryLoop loop(o, found.callback());
  ASSERT_TRUE(loop.start().ok());
  ASSERT_TRUE(eventually([&] { return loop.attempts() >= 1; }));
  loop.retry_now();
  ASSERT_TRUE(eventually([&] { return loop.attempts() >= 2; }));
  auto t0 = std::chrono::steady_clock::now();
  loop.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
}

}  // namespace
}  // namespace kgpu
