// InotifyChannel (issue 40, item 2): the process's watches share one inotify instance; each channel
// reads only the events its own watches asked for, as from an inotify fd of its own.
#include <gtest/gtest.h>
#include <poll.h>
#include <sys/inotify.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/inotify_hub.h"

namespace kgpu {
namespace {

namespace fs = std::filesystem;

class InotifyHubTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "kgpu-hub-XXXXXX").string();
    root = ::mkdtemp(pattern.data());
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(root, ec);
  }
  struct Event {
    int wd;
    uint32_t mask;
    std::string name;
  };
  // The events readable within `timeout_ms` (waits for the first, then takes what is there).
  static std::vector<Event> next_events(const InotifyChannel& channel, int timeout_ms = 5000) {
    std::vector<Event> out;
    pollfd p{channel.fd(), POLLIN, 0};
    if (::poll(&p, 1, timeout_ms) != 1) return out;
    alignas(inotify_event) char buffer[4096];
    for (ssize_t n; (n = ::read(channel.fd(), buffer, sizeof buffer)) > 0;)
      for (ssize_t at = 0; at + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(buffer + at);
        out.push_back({ev->wd, ev->mask, ev->len ? std::string(ev->name) : std::string()});
        at += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      }
    return out;
  }
  static bool has(const std::vector<Event>& events, uint32_t mask, const std::string& name) {
    for (const auto& e : events)
      if ((e.mask & mask) && e.name == name) return true;
    return false;
  }
  std::string root;
};

TEST(InotifyChannelWants, WhatItAskedForAndWhatEveryWatcherGets) {
  EXPECT_TRUE(inotify_channel_wants(IN_CREATE, IN_CREATE));
  EXPECT_TRUE(inotify_channel_wants(IN_CREATE, IN_CREATE | IN_ISDIR));
  EXPECT_FALSE(inotify_channel_wants(IN_CREATE, IN_DELETE));
  EXPECT_FALSE(inotify_channel_wants(IN_CREATE | IN_ONLYDIR, IN_CLOSE_WRITE));
  EXPECT_TRUE(inotify_channel_wants(IN_CREATE, IN_IGNORED));
  EXPECT_TRUE(inotify_channel_wants(IN_CREATE, IN_Q_OVERFLOW));
  EXPECT_TRUE(inotify_channel_wants(IN_CREATE, IN_UNMOUNT));
}

TEST_F(InotifyHubTest, EachChannelGetsItsOwnWatchesEventsOnly) {
  fs::create_directory(root + "/a");
  fs::create_directory(root + "/b");
  auto a = InotifyChannel::open();
  auto b = InotifyChannel::open();
  ASSERT_TRUE(a && b);
  const int wa = a->add_watch(root + "/a", IN_CREATE);
  const int wb = b->add_watch(root + "/b", IN_CREATE);
  ASSERT_GE(wa, 0);
  ASSERT_GE(wb, 0);
  std::ofstream(root + "/b/x") << "";
  auto events = next_events(*b);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].wd, wb);
  EXPECT_EQ(events[0].name, "x");
  std::ofstream(root + "/a/y") << "";
  events = next_events(*a);
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].wd, wa);
  EXPECT_EQ(events[0].name, "y");
  EXPECT_TRUE(next_events(*b, 50).empty());  // nothing of a's folder
}

// Two channels on one folder share the kernel's watch; each gets what its own mask asks for, and
// one removing its watch leaves the other's in place.
TEST_F(InotifyHubTest, ChannelsSharingAFolderKeepTheirOwnMasks) {
  fs::create_directory(root + "/d");
  auto creates = InotifyChannel::open();
  auto deletes = InotifyChannel::open();
  ASSERT_TRUE(creates && deletes);
  const int wc = creates->add_watch(root + "/d", IN_CREATE);
  const int wd = deletes->add_watch(root + "/d", IN_DELETE);
  ASSERT_GE(wc, 0);
  ASSERT_GE(wd, 0);
  std::ofstream(root + "/d/f") << "";
  auto got = next_events(*creates);
  EXPECT_TRUE(has(got, IN_CREATE, "f"));
  fs::remove(root + "/d/f");
  got = next_events(*deletes);
  ASSERT_FALSE(got.empty());
  EXPECT_TRUE(has(got, IN_DELETE, "f"));
  EXPECT_FALSE(has(got, IN_CREATE, "f"));
  EXPECT_TRUE(next_events(*creates, 50).empty());  // the delete is not for it

  creates->rm_watch(wc);
  std::ofstream(root + "/d/g") << "";
  fs::remove(root + "/d/g");
  got = next_events(*deletes);
  EXPECT_TRUE(has(got, IN_DELETE, "g"));
  EXPECT_TRUE(next_events(*creates, 50).empty());
}

TEST_F(InotifyHubTest, AFolderRemovedSendsIgnoredToItsWatchers) {
  fs::create_directory(root + "/gone");
  auto c = InotifyChannel::open();
  ASSERT_TRUE(c);
  ASSERT_GE(c->add_watch(root + "/gone", IN_CREATE | IN_DELETE_SELF), 0);
  fs::remove(root + "/gone");
  std::vector<Event> all;
  for (int i = 0; i < 3 && !has(all, IN_IGNORED, ""); ++i)
    for (auto& e : next_events(*c)) all.push_back(e);
  EXPECT_TRUE(has(all, IN_DELETE_SELF, ""));
  EXPECT_TRUE(has(all, IN_IGNORED, ""));
}

// A channel that does not read loses events as an inotify queue does, and is told so.
TEST_F(InotifyHubTest, AChannelThatFallsBehindGetsAnOverflow) {
  fs::create_directory(root + "/busy");
  auto slow = InotifyChannel::open();
  auto fast = InotifyChannel::open();
  ASSERT_TRUE(slow && fast);
  ASSERT_GE(slow->add_watch(root + "/busy", IN_CREATE | IN_DELETE), 0);
  fs::create_directory(root + "/other");
  ASSERT_GE(fast->add_watch(root + "/other", IN_CREATE), 0);
  // Far more than a pipe holds (64 KiB): 8,000 events of 48 bytes.
  for (int i = 0; i < 4000; ++i) {
    const std::string f = root + "/busy/file-with-a-longer-name-" + std::to_string(i % 8);
    std::ofstream(f) << "";
    fs::remove(f);
  }
  // The hub has handled all of that once an event after it reached another channel.
  std::ofstream(root + "/other/mark") << "";
  ASSERT_TRUE(has(next_events(*fast), IN_CREATE, "mark"));
  bool overflow = false;
  for (int i = 0; i < 100 && !overflow; ++i)
    for (const auto& e : next_events(*slow)) overflow |= (e.mask & IN_Q_OVERFLOW) && e.wd == -1;
  EXPECT_TRUE(overflow);
  // And it keeps getting events afterwards.
  std::ofstream(root + "/busy/after") << "";
  bool after = false;
  for (int i = 0; i < 100 && !after; ++i) after = has(next_events(*slow), IN_CREATE, "after");
  EXPECT_TRUE(after);
}

TEST_F(InotifyHubTest, AMovedChannelKeepsItsWatchesAndAClosedOneLeavesNoWatch) {
  fs::create_directory(root + "/m");
  auto opened = InotifyChannel::open();
  ASSERT_TRUE(opened);
  ASSERT_GE(opened->add_watch(root + "/m", IN_CREATE), 0);
  InotifyChannel moved = std::move(*opened);
  std::ofstream(root + "/m/a") << "";
  EXPECT_TRUE(has(next_events(moved), IN_CREATE, "a"));
  {
    InotifyChannel gone = std::move(moved);
  }
  auto again = InotifyChannel::open();
  ASSERT_TRUE(again);
  EXPECT_LT(again->add_watch(root + "/missing", IN_CREATE), 0);
  EXPECT_EQ(errno, ENOENT);
}

}  // namespace
}  // namespace kgpu
