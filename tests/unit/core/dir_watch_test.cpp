// DirWatch: folder watches that survive their folders (issue 20 items 5, 7 and 9): a folder removed
// and created again, one that appears only after the watch started, and a queue overflow.
#include <gtest/gtest.h>

#include <chrono>
#include <poll.h>
#include <sys/inotify.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "core/dir_watch.h"

namespace kgpu {
namespace {

namespace fs = std::filesystem;
constexpr uint32_t kMask = IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM | IN_CLOSE_WRITE;

class DirWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kgpu-watch-XXXXXX").string();
    root = ::mkdtemp(pattern.data());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  // Waits (bounded) for the watch's fd to become readable, then drains it: what drain() says.
  static bool next_change(DirWatch& watch) {
    pollfd p{watch.fd(), POLLIN, 0};
    if (::poll(&p, 1, 5000) != 1) return false;
    return watch.drain();
  }
  // Whether the watch reports a change for a file created in `dir` now. Events the hub's thread
  // hands over late from earlier steps (a rearm's IN_IGNORED) are no change: read on until one is.
  static bool sees_new_file(DirWatch& watch, const std::string& dir, const std::string& name) {
    std::ofstream(dir + "/" + name) << "x";
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (std::chrono::steady_clock::now() < deadline)
      if (next_change(watch)) return true;
    return false;
  }
  std::string root;
};

TEST_F(DirWatchTest, ReportsEventsInTheFolder) {
  fs::create_directory(root + "/dri");
  auto watch = DirWatch::open({root + "/dri"}, kMask);
  ASSERT_TRUE(watch.ok()) << watch.error().message;
  EXPECT_EQ(watch->watched_directly(), 1u);
  EXPECT_TRUE(sees_new_file(*watch, root + "/dri", "card0"));
}

TEST_F(DirWatchTest, FolderRemovedAndCreatedAgainIsWatchedAgain) {
  fs::create_directory(root + "/dri");
  auto watch = DirWatch::open({root + "/dri"}, kMask);
  ASSERT_TRUE(watch.ok());
  fs::remove_all(root + "/dri");
  EXPECT_TRUE(next_change(*watch));  // the folder vanished
  EXPECT_EQ(watch->watched_directly(), 0u);
  fs::create_directory(root + "/dri");
  EXPECT_TRUE(next_change(*watch));  // it is back
  EXPECT_EQ(watch->watched_directly(), 1u);
  // And a device node added later is seen: with a plain inotify watch this event never came.
  EXPECT_TRUE(sees_new_file(*watch, root + "/dri", "renderD128"));
}

TEST_F(DirWatchTest, FolderThatAppearsLaterIsPickedUpThroughItsAncestors) {
  auto watch = DirWatch::open({root + "/etc/features.d"}, kMask);
  ASSERT_TRUE(watch.ok());
  EXPECT_EQ(watch->watched_directly(), 0u);
  fs::create_directories(root + "/etc/features.d");  // two levels at once
  EXPECT_TRUE(next_change(*watch));
  EXPECT_EQ(watch->watched_directly(), 1u);
  EXPECT_TRUE(sees_new_file(*watch, root + "/etc/features.d", "kgpu"));
}

TEST_F(DirWatchTest, FolderMovedAwayAndReplacedFollowsThePath) {
  fs::create_directory(root + "/conf");
  // No IN_CLOSE_WRITE: the hub's thread may hand config.yaml's over after its IN_CREATE was read,
  // and the last check must see only what the moved-away folder would cause.
  auto watch = DirWatch::open({root + "/conf"}, IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM);
  ASSERT_TRUE(watch.ok());
  fs::create_directory(root + "/staging");
  fs::rename(root + "/conf", root + "/old");
  fs::rename(root + "/staging", root + "/conf");
  // Drain until quiet: the watch now follows the new folder at the path, not the moved one.
  ASSERT_TRUE(next_change(*watch));
  while (true) {
    pollfd p{watch->fd(), POLLIN, 0};
    if (::poll(&p, 1, 0) != 1) break;
    watch->drain();
  }
  EXPECT_EQ(watch->watched_directly(), 1u);
  EXPECT_TRUE(sees_new_file(*watch, root + "/conf", "config.yaml"));
  std::ofstream(root + "/old/ignored") << "x";
  pollfd p{watch->fd(), POLLIN, 0};
  EXPECT_EQ(::poll(&p, 1, 100), 0) << "the moved-away folder is still watched";
}

TEST_F(DirWatchTest, UnrelatedEventsInAnAncestorAreNotChanges) {
  auto watch = DirWatch::open({root + "/dri"}, kMask);
  ASSERT_TRUE(watch.ok());
  std::ofstream(root + "/tty0") << "x";  // devtmpfs noise next to the missing folder
  EXPECT_FALSE(next_change(*watch));
}

TEST_F(DirWatchTest, QueueOverflowCountsAsAChangeAndKeepsWatching) {
  fs::create_directory(root + "/conf");
  auto watch = DirWatch::open({root + "/conf"}, kMask);
  ASSERT_TRUE(watch.ok());
  std::ifstream limit_file("/proc/sys/fs/inotify/max_queued_events");
  size_t limit = 16384;
  limit_file >> limit;
  if (limit > 200000) GTEST_SKIP() << "max_queued_events is " << limit;
  // Twice the queue's size of events without reading: the kernel drops the rest and queues
  // IN_Q_OVERFLOW. Each touch is IN_CREATE + IN_CLOSE_WRITE.
  for (size_t i = 0; i < limit; ++i) std::ofstream(root + "/conf/f" + std::to_string(i % 64)) << "";
  EXPECT_TRUE(watch->drain());
  EXPECT_EQ(watch->watched_directly(), 1u);
  EXPECT_TRUE(sees_new_file(*watch, root + "/conf", "after"));
}

}  // namespace
}  // namespace kgpu
