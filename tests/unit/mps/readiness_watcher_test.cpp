// MpsReadinessWatcher: the plugin re-plans as soon as an advertised MPS resource's marker stops
// counting: released while watched (the supervisor's close is seen), or released in the window
// between the readiness check and the watch (the marker is looked at again once watched).
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>

#include "mps/readiness.h"
#include "mps/readiness_watcher.h"
#include "plan/mps_paths.h"
#include "support/test_folder.h"

namespace kgpu {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

class ReadinessWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = test::fresh_test_folder("kgpu-ready");
    config_.mps_root = root_.string();
    marker_ = mps_ready_marker(config_.mps_root, "nvidia.com/gpu");
    fs::create_directories(fs::path(marker_).parent_path());
    Resource r;
    r.name = "nvidia.com/gpu";
    r.sharing = SharingKind::Mps;
    plan_.resources.push_back(r);
  }
  void TearDown() override { fs::remove_all(root_); }
  // A supervisor's marker: written and flock'ed through a write fd (closed: released).
  int hold_marker() {
    const int fd = ::open(marker_.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    EXPECT_GE(fd, 0);
    EXPECT_EQ(::flock(fd, LOCK_EX), 0);
    return fd;
  }
  void changed() {
    std::lock_guard lock(mu_);
    ++changes_;
    cv_.notify_all();
  }
  bool wait_changes(int n) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, 10s, [&] { return changes_ >= n; });
  }
  int changes() {
    std::lock_guard lock(mu_);
    return changes_;
  }

  fs::path root_;
  Config config_;
  std::string marker_;
  ResourcePlan plan_;
  std::mutex mu_;
  std::condition_variable cv_;
  int changes_ = 0;
};

TEST_F(ReadinessWatcherTest, AMarkerReleasedWhileWatchedReplansAtOnce) {
  const int fd = hold_marker();
  ASSERT_TRUE(mps_marker_live(marker_));
  MpsReadinessWatcher watcher([this] { changed(); });
  watcher.on_plan(config_, plan_);
  EXPECT_EQ(changes(), 0);  // live: nothing to do
  ::close(fd);              // the supervisor dies: the kernel closes its fd and drops the lock
  EXPECT_TRUE(wait_changes(1));
}

TEST_F(ReadinessWatcherTest, AMarkerReleasedBeforeItWasWatchedReplansAtOnce) {
  // The plan was made while the marker was live; the supervisor died before the watch was armed,
  // so its close cannot be seen any more: the marker is stale (there, unlocked).
  ::close(hold_marker());
  ASSERT_TRUE(fs::exists(marker_));
  ASSERT_FALSE(mps_marker_live(marker_));
  MpsReadinessWatcher watcher([this] { changed(); });
  watcher.on_plan(config_, plan_);
  EXPECT_EQ(changes(), 1);  // at once, from on_plan itself
}

}  // namespace
}  // namespace kgpu
