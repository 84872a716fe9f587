// The scheduling of the kubelet's DRA calls (issue 28, item 6): one claim at a time per UID, claims
// of different UIDs in parallel on a bounded pool that exists only while there is work, a budget
// per call, callers that have gone, and stop(). Every wait is on a condition with a deadline.
#include "dra/claims/claim_calls.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <future>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "support/eventually.h"

namespace kgpu::dra {
namespace {

using namespace std::chrono_literals;
using Clock = std::chrono::steady_clock;

// Gates for tasks that must hang until the test lets them go, and what the tasks saw.
struct Board {
  std::mutex mu;
  std::condition_variable cv;
  std::set<std::string> held;  // tasks with these names wait while held
  int in_flight = 0, max_in_flight = 0;
  std::vector<std::string> ran;                     // names, in the order they started
  std::vector<std::pair<std::string, Skipped>> skipped;
  int calls_done = 0;

  // Waits for `pred` under the lock, at most 10 s.
  template <typename Pred>
  bool wait(Pred pred) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, 10s, [&] { return pred(); });
  }
  void release(const std::string& name) {
    std::lock_guard lock(mu);
    held.erase(name);
    cv.notify_all();
  }

  ClaimCalls::Task task(const std::string& uid, const std::string& name, Lane lane = Lane::Api,
                        const std::string& tenant = "") {
    return {uid,
            [this, name] {
              std::unique_lock lock(mu);
              ran.push_back(name);
              max_in_flight = std::max(max_in_flight, ++in_flight);
              cv.notify_all();
              cv.wait_for(lock, 10s, [&] { return !held.count(name); });
              --in_flight;
              cv.notify_all();
            },
            [this, name](Skipped why) {
              std::lock_guard lock(mu);
              skipped.emplace_back(name, why);
              cv.notify_all();
            },
            lane,
            tenant};
  }
  ClaimCalls::Call call(std::vector<ClaimCalls::Task> tasks, std::function<bool()> cancelled = {}) {
    ClaimCalls::Call c;
    c.tasks = std::move(tasks);
    c.done = [this] {
      std::lock_guard lock(mu);
      ++calls_done;
      cv.notify_all();
    };
    c.cancelled = std::move(cancelled);
    return c;
  }
  bool has_run(const std::string& name) { return std::find(ran.begin(), ran.end(), name) != ran.end(); }
};

TEST(ClaimCallsTest, AHangingClaimDoesNotDelayAnotherClaim) {
  ClaimCalls calls;
  Board b;
  b.held = {"hang"};
  ASSERT_TRUE(calls.submit(b.call({b.task("uid-a", "hang")})));
  ASSERT_TRUE(b.wait([&] { return b.has_run("hang"); }));
  // Another call, for other claims, is answered while the first hangs.
  ASSERT_TRUE(calls.submit(b.call({b.task("uid-b", "b"), b.task("uid-c", "c")})));
  ASSERT_TRUE(b.wait([&] { return b.calls_done == 1; }));
  {
    std::lock_guard lock(b.mu);
    EXPECT_TRUE(b.has_run("b") && b.has_run("c"));
    EXPECT_EQ(b.in_flight, 1);  // "hang" still hangs
  }
  b.release("hang");
  ASSERT_TRUE(b.wait([&] { return b.calls_done == 2; }));
  EXPECT_TRUE(test::eventually([&] { return calls.threads() == 0; }, 10s));  // idle: no thread
}

// when_idle (where the kubelet plugin trims the heap after a big call) runs once every worker has
// ended, never while a claim still runs, and again after the next burst.
TEST(ClaimCallsTest, TheIdleHookRunsOnceNoClaimIsQueuedOrRunning) {
  std::atomic<int> idle{0};
  std::atomic<int> running_at_idle{-1};
  Board b;
  ClaimCallsOptions options;
  options.when_idle = [&] {
    std::lock_guard lock(b.mu);
    running_at_idle = b.in_flight;
    ++idle;
    b.cv.notify_all();
  };
  ClaimCalls calls(options);
  b.held = {"hang"};
  ASSERT_TRUE(calls.submit(b.call({b.task("uid-a", "hang"), b.task("uid-b", "b", Lane::Local)})));
  ASSERT_TRUE(b.wait([&] { return b.has_run("hang") && b.has_run("b"); }));
  // "b"'s Local worker has nothing left, but "hang" still runs: not idle.
  ASSERT_TRUE(b.wait([&] { return b.in_flight == 1; }));
  ASSERT_TRUE(test::eventually([&] { return calls.threads() == 1; }, 10s));  // "b"'s worker has ended
  EXPECT_EQ(idle.load(), 0);
  b.release("hang");
  ASSERT_TRUE(b.wait([&] { return idle.load() == 1; }));
  EXPECT_EQ(running_at_idle.load(), 0);
  EXPECT_EQ(b.calls_done, 1);
  ASSERT_TRUE(calls.submit(b.call({b.task("uid-c", "c")})));
  ASSERT_TRUE(b.wait([&] { return idle.load() == 2; }));
}

// Calls for one claim run one at a time, in arrival order, whatever else runs beside them.
TEST(ClaimCallsTest, CallsForOneClaimNeverRunAtOnceAndKeepTheirOrder) {
  ClaimCalls calls(ClaimCallsOptions{8, 40s, "kgpu-dra-test"});
  std::mutex mu;
  std::condition_variable cv;
  std::atomic<int> same_in_flight{0};
  std::atomic<int> overlaps{0};
  std::vector<int> order;  // the call index of each task of "uid-x", as it ran
  int done = 0;
  constexpr int kCalls = 200;
  for (int i = 0; i < kCalls; ++i) {
    ClaimCalls::Call c;
    c.tasks.push_back({"uid-x", [&, i] {
                         if (same_in_flight.fetch_add(1) != 0) overlaps++;
                         for (int k = 0; k < 200; ++k) std::this_thread::yield();  // widens the window
                         {
                           std::lock_guard lock(mu);
                           order.push_back(i);
                         }
                         same_in_flight.fetch_sub(1);
                       },
                       {}});
    // Other claims of the same call run beside it.
    c.tasks.push_back({"uid-other-" + std::to_string(i % 5), [] {}, {}});
    c.done = [&] {
      std::lock_guard lock(mu);
      ++done;
      cv.notify_all();
    };
    ASSERT_TRUE(calls.submit(std::move(c)));
  }
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, 30s, [&] { return done == kCalls; }));
  EXPECT_EQ(overlaps.load(), 0);
  ASSERT_EQ(order.size(), size_t{kCalls});
  EXPECT_TRUE(std::is_sorted(order.begin(), order.end()));
}

TEST(ClaimCallsTest, ThePoolNeverExceedsItsBound) {
  ClaimCalls calls(ClaimCallsOptions{3, 40s, "kgpu-dra-test"});
  Board b;
  std::vector<ClaimCalls::Task> tasks;
  for (int i = 0; i < 10; ++i) {
    b.held.insert("t" + std::to_string(i));
    tasks.push_back(b.task("uid-" + std::to_string(i), "t" + std::to_string(i)));
  }
  ASSERT_TRUE(calls.submit(b.call(std::move(tasks))));
  ASSERT_TRUE(b.wait([&] { return b.in_flight == 3; }));
  EXPECT_EQ(calls.threads(), 3u);
  EXPECT_EQ(calls.pending(), 10u);
  // More calls add no thread.
  ASSERT_TRUE(calls.submit(b.call({b.task("uid-late", "late")})));
  EXPECT_LE(calls.threads(), 3u);
  {
    std::lock_guard lock(b.mu);
    b.held.clear();
    b.cv.notify_all();
  }
  ASSERT_TRUE(b.wait([&] { return b.calls_done == 2; }));
  std::lock_guard lock(b.mu);
  EXPECT_EQ(b.max_in_flight, 3);
  EXPECT_EQ(b.ran.size(), 11u);
}

// A claim that cannot start within its call's budget (here: queued behind a hanging call for the
// same claim, and behind a full pool) is answered with an error without running; the claims of
// the call that could run were handled.
TEST(ClaimCallsTest, AClaimThatCannotStartWithinTheBudgetIsAnsweredWithAnError) {
  ClaimCalls calls(ClaimCallsOptions{2, 50ms, "kgpu-dra-test"});
  Board b;
  b.held = {"hang-a", "hang-b"};
  ASSERT_TRUE(calls.submit(b.call({b.task("uid-a", "hang-a"), b.task("uid-b", "hang-b")})));
  ASSERT_TRUE(b.wait([&] { return b.in_flight == 2; }));  // the pool is full
  auto submitted = Clock::now();
  ASSERT_TRUE(calls.submit(b.call({b.task("uid-a", "a-again"), b.task("uid-c", "c")})));
  {
    // What is tested is a budget running out: wait for the clock, bounded.
    std::unique_lock lock(b.mu);
    b.cv.wait_until(lock, submitted + 60ms, [] { return false; });
  }
  ASSERT_GE(Clock::now(), submitted + 50ms);
  b.release("hang-a");
  b.release("hang-b");
  ASSERT_TRUE(b.wait([&] { return b.calls_done == 2; }));
  std::lock_guard lock(b.mu);
  EXPECT_FALSE(b.has_run("a-again"));
  EXPECT_FALSE(b.has_run("c"));
  ASSERT_EQ(b.skipped.size(), 2u);
  for (const auto& [name, why] : b.skipped) EXPECT_EQ(why, Skipped::Budget) << name;
  EXPECT_NE(describe(Skipped::Budget).find("budget"), std::string::npos);
}

TEST(ClaimCallsTest, ClaimsOfACallWhoseCallerHasGoneAreSkipped) {
  ClaimCalls calls;
  Board b;
  b.held = {"hang"};
  ASSERT_TRUE(calls.submit(b.call({b.task("uid-a", "hang")})));
  ASSERT_TRUE(b.wait([&] { return b.has_run("hang"); }));
  std::atomic<bool> gone{false};
  ASSERT_TRUE(calls.submit(b.call({b.task("uid-a", "queued")}, [&] { return gone.load(); })));
  gone = true;  // the kubelet cancelled while the claim waited behind the hanging call
  b.release("hang");
  ASSERT_TRUE(b.wait([&] { return b.calls_done == 2; }));
  std::lock_guard lock(b.mu);
  EXPECT_FALSE(b.has_run("queued"));
  ASSERT_EQ(b.skipped.size(), 1u);
  EXPECT_EQ(b.skipped[0].second, Skipped::CallerGone);
}

// stop() skips what is queued, waits for the running task (the daemon ends what it waits on) and
// returns once it is released; later calls are refused.
TEST(ClaimCallsTest, StopWithAHangingTaskReturnsOnceItIsReleased) {
  ClaimCalls calls;
  Board b;
  b.held = {"hang"};
  ASSERT_TRUE(calls.submit(b.call({b.task("uid-a", "hang")})));
  ASSERT_TRUE(b.wait([&] { return b.has_run("hang"); }));
  ASSERT_TRUE(calls.submit(b.call({b.task("uid-a", "queued")})));
  auto stopped = std::async(std::launch::async, [&] { calls.stop(); });
  ASSERT_TRUE(test::eventually([&] { return calls.stopping(); }, 10s));
  EXPECT_FALSE(calls.submit(b.call({b.task("uid-z", "refused")})));
  EXPECT_EQ(stopped.wait_for(0s), std::future_status::timeout);  // "hang" still runs
  b.release("hang");
  ASSERT_EQ(stopped.wait_for(10s), std::future_status::ready);
  EXPECT_EQ(calls.threads(), 0u);
  std::lock_guard lock(b.mu);
  EXPECT_EQ(b.calls_done, 2);
  EXPECT_FALSE(b.has_run("queued"));
  EXPECT_FALSE(b.has_run("refused"));
  ASSERT_EQ(b.skipped.size(), 1u);
  EXPECT_EQ(b.skipped[0].second, Skipped::Stopping);
}

TEST(ClaimCallsTest, ACallWithoutClaimsIsAnsweredAtOnceAndRestartAcceptsCallsAgain) {
  ClaimCalls calls;
  Board b;
  ASSERT_TRUE(calls.submit(b.call({})));
  EXPECT_EQ(b.calls_done, 1);
  EXPECT_EQ(calls.threads(), 0u);
  calls.stop();
  EXPECT_FALSE(calls.submit(b.call({b.task("uid-a", "a")})));
  calls.restart();
  ASSERT_TRUE(calls.submit(b.call({b.task("uid-a", "a")})));
  ASSERT_TRUE(b.wait([&] { return b.calls_done == 2; }));
}

// Issue 38, item 3: 80 claims of one namespace whose API reads hang (as many calls) must not delay
// an unprepare (no API round trip: the Local lane) nor another namespace's prepare.
TEST(ClaimCallsTest, EightyHangingApiReadsDelayNeitherAnUnprepareNorAnotherTenantsPrepare) {
  ClaimCalls calls;  // 8 Api threads, 6 of them at most for one tenant; 8 Local threads
  Board b;
  for (int i = 0; i < 80; ++i) {
    const std::string name = "slow-" + std::to_string(i);
    b.held.insert(name);
    ASSERT_TRUE(calls.submit(b.call({b.task("uid-" + name, name, Lane::Api, "team-slow")})));
  }
  ASSERT_TRUE(b.wait([&] { return b.in_flight == 6; }));  // its bound in the Api lane
  // The unprepare of an unrelated claim, and a repeated prepare, run at once.
  auto t0 = Clock::now();
  ASSERT_TRUE(calls.submit(b.call({b.task("uid-done", "unprepare", Lane::Local, "team-slow")})));
  ASSERT_TRUE(b.wait([&] { return b.calls_done == 1; }));
  const auto local_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  // Another namespace's first prepare finds an Api thread free.
  t0 = Clock::now();
  ASSERT_TRUE(calls.submit(b.call({b.task("uid-b", "team-b", Lane::Api, "team-b")})));
  ASSERT_TRUE(b.wait([&] { return b.calls_done == 2; }));
  const auto other_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  {
    std::lock_guard lock(b.mu);
    EXPECT_EQ(b.in_flight, 6);  // every slow read still hangs
    EXPECT_EQ(b.max_in_flight, 7);
  }
  ::testing::Test::RecordProperty("local_ms", std::to_string(local_ms));
  ::testing::Test::RecordProperty("other_tenant_ms", std::to_string(other_ms));
  std::printf("with 80 hanging API reads: an unprepare answered in %.2f ms, another tenant's prepare in %.2f ms\n",
              local_ms, other_ms);
  {
    std::lock_guard lock(b.mu);
    b.held.clear();
    b.cv.notify_all();
  }
  ASSERT_TRUE(b.wait([&] { return b.calls_done == 82; }));
  EXPECT_TRUE(b.skipped.empty());
}

// The lanes never break a claim's order: a claim's unprepare (Local) waits for its own prepare
// (Api) that came first, even with Local threads free.
TEST(ClaimCallsTest, AClaimsTasksKeepTheirOrderAcrossLanes) {
  ClaimCalls calls;
  Board b;
  b.held = {"prepare"};
  ASSERT_TRUE(calls.submit(b.call({b.task("uid-a", "prepare", Lane::Api, "team-a")})));
  ASSERT_TRUE(b.wait([&] { return b.has_run("prepare"); }));
  ASSERT_TRUE(calls.submit(b.call({b.task("uid-a", "unprepare", Lane::Local, "team-a")})));
  ASSERT_TRUE(calls.submit(b.call({b.task("uid-z", "other", Lane::Local, "team-a")})));
  ASSERT_TRUE(b.wait([&] { return b.has_run("other"); }));
  {
    std::lock_guard lock(b.mu);
    EXPECT_FALSE(b.has_run("unprepare"));
  }
  b.release("prepare");
  ASSERT_TRUE(b.wait([&] { return b.calls_done == 3; }));
  std::lock_guard lock(b.mu);
  EXPECT_EQ(b.ran, (std::vector<std::string>{"prepare", "other", "unprepare"}));
}

// Three tenants with six slow reads each, four Api threads, at most two per tenant: a free thread
// goes to the tenant running the fewest (the oldest task among equals), so every tenant runs and
// none runs more than its bound.
TEST(ClaimCallsTest, ATenantNeverRunsMoreThanItsBoundInTheApiLane) {
  ClaimCalls calls(ClaimCallsOptions{4, 40s, "kgpu-dra-test", 1, 2});
  Board b;
  for (int i = 0; i < 6; ++i)
    for (const std::string tenant : {"a", "b", "c"}) {
      const std::string name = tenant + std::to_string(i);
      b.held.insert(name);
      ASSERT_TRUE(calls.submit(b.call({b.task("uid-" + name, name, Lane::Api, tenant)})));
    }
  ASSERT_TRUE(b.wait([&] { return b.in_flight == 4; }));
  {
    std::lock_guard lock(b.mu);
    EXPECT_EQ(b.ran.size(), 4u);
    std::map<char, int> per;
    for (const auto& r : b.ran) ++per[r[0]];
    for (const auto& [t, n] : per) EXPECT_LE(n, 2) << t;
    EXPECT_EQ(per.size(), 3u);
    b.held.clear();
    b.cv.notify_all();
  }
  ASSERT_TRUE(b.wait([&] { return b.calls_done == 18; }));
}

}  // namespace
}  // namespace kgpu::dra
