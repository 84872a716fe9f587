// NodeWatcher against a fake API server over loopback HTTP.
#include "kube/node_watcher.h"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <optional>
#include <thread>

#include "support/eventually.h"
#include "support/fake_api_server.h"

namespace kgpu::kube {
namespace {

using namespace std::chrono_literals;
const std::string kLabel = "nvidia.com/device-plugin.config";

TEST(NodeWatcher, GetsTheNodeThenReportsEachLabelChange) {
  test::FakeApiServer api("n1", {{kLabel, "a"}});
  NodeWatcher watcher(ApiServer{api.url(), "", "", ""}, "n1");
  auto first = watcher.get_node(2s);
  ASSERT_TRUE(first.ok()) << first.error().message;
  EXPECT_EQ(first->labels.at(kLabel), "a");

  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> seen;
  watcher.start(*first, [&](const NodeWatcher::Labels& labels) {
    std::lock_guard lock(mu);
    seen.push_back(labels.count(kLabel) ? labels.at(kLabel) : "<none>");
    cv.notify_all();
  });
  ASSERT_TRUE(api.wait_watching(5s));
  api.set_labels({{kLabel, "a"}, {"unrelated", "x"}});  // kLabel unchanged, other label changed: reported
  api.set_labels({{kLabel, "b"}});
  api.set_labels({});
  std::unique_lock lock(mu);
  ASSERT_TRUE(cv.wait_for(lock, 5s, [&] { return seen.size() >= 3; }));
  EXPECT_EQ(seen, (std::vector<std::string>{"a", "b", "<none>"}));
}

TEST(NodeWatcher, UnreachableServerIsAClearError) {
  NodeWatcher watcher(ApiServer{"http://127.0.0.1:1", "", "", ""}, "n1");
  auto node = watcher.get_node(1s);
  ASSERT_FALSE(node.ok());
  EXPECT_NE(node.error().message.find("/api/v1/nodes/n1"), std::string::npos) << node.error().message;
}

TEST(NodeWatcher, StopsPromptlyWhileWatching) {
  test::FakeApiServer api("n1", {});
  NodeWatcher watcher(ApiServer{api.url(), "", "", ""}, "n1");
  watcher.start({}, [](const NodeWatcher::Labels&) {});
  ASSERT_TRUE(api.wait_watching(5s));
  auto t0 = std::chrono::steady_clock::now();
  watcher.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

}  // namespace
}  // namespace kgpu::kube

namespace kgpu::kube {
namespace {

using Fault = test::FakeApiServer::Fault;

NodeWatcher::Timing fast_timing() {
  NodeWatcher::Timing t;
  t.get_deadline = 2s;
  t.first_backoff = 10ms;
  t.max_backoff = 50ms;
  t.min_quiet_watch = 500ms;
  return t;
}

// Collects the label values the watcher reports, for waiting on them.
struct Seen {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::string> values;
  NodeWatcher::Callback callback() {
    return [this](const NodeWatcher::Labels& labels) {
      std::lock_guard lock(mu);
      values.push_back(labels.count(kLabel) ? labels.at(kLabel) : "<none>");
      cv.notify_all();
    };
  }
  bool wait_for(const std::string& value, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, timeout, [&] { return !values.empty() && values.back() == value; });
  }
};

// Regression (issue 13 "Also"): a GET stalled by the API server was neither interruptible nor
// bounded as a whole; stop() waited out its 10 s timeout (~9 s exit delay in the daemon).
TEST(NodeWatcherChaos, StopsPromptlyWhileTheServerStallsAGet) {
  test::FakeApiServer api("n1", {});
  api.set_fault(Fault::Stall);
  NodeWatcher watcher(ApiServer{api.url(), "", "", ""}, "n1");
  watcher.start({}, [](const NodeWatcher::Labels&) {});  // no resourceVersion: GET first
  ASSERT_TRUE(api.wait_requests(1, 5s));
  auto t0 = std::chrono::steady_clock::now();
  watcher.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
}

TEST(NodeWatcherChaos, GetNodeKeepsItsDeadlineWhenTheServerStalls) {
  test::FakeApiServer api("n1", {});
  api.set_fault(Fault::Stall);
  NodeWatcher watcher(ApiServer{api.url(), "", "", ""}, "n1");
  auto t0 = std::chrono::steady_clock::now();
  auto node = watcher.get_node(300ms);
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
  ASSERT_FALSE(node.ok());
  EXPECT_NE(node.error().message.find("no complete answer within 0.3 s"), std::string::npos) << node.error().message;
}

TEST(NodeWatcherChaos, StopEndsAGetInFlightFromAnotherThread) {
  test::FakeApiServer api("n1", {});
  api.set_fault(Fault::Stall);
  NodeWatcher watcher(ApiServer{api.url(), "", "", ""}, "n1");
  std::optional<Result<NodeSnapshot>> node;
  std::thread caller([&] { node = watcher.get_node(30s); });
  ASSERT_TRUE(api.wait_requests(1, 5s));
  auto t0 = std::chrono::steady_clock::now();
  watcher.stop();
  caller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  ASSERT_TRUE(node.has_value());
  EXPECT_FALSE(node->ok());
}

// A listening socket whose accept queue is full: the kernel drops further SYNs, so a connect to
// it hangs in SYN_SENT (as with an API server address that drops packets).
class FullListenQueue {
 public:
  FullListenQueue() {
    listener_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    if (::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 || ::listen(listener_, 0) != 0 ||
        ::getsockname(listener_, reinterpret_cast<sockaddr*>(&addr), &len) != 0)
      return;
    port_ = ntohs(addr.sin_port);
    for (int i = 0; i < 4; ++i) {  // fill the queue (never accepted)
      int c = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
      ::connect(c, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
      fillers_.push_back(c);
    }
  }
  ~FullListenQueue() {
    for (int c : fillers_) ::close(c);
    ::close(listener_);
  }
  int port() const { return port_; }

 private:
  int listener_ = -1, port_ = 0;
  std::vector<int> fillers_;
};

TEST(NodeWatcherChaos, StopEndsAConnectThatHangs) {
  FullListenQueue queue;
  ASSERT_GT(queue.port(), 0);
  NodeWatcher watcher(ApiServer{"http://127.0.0.1:" + std::to_string(queue.port()), "", "", ""}, "n1");
  // The kernel lists each hanging connect in /proc/net/tcp as SYN_SENT (state 02) to our port;
  // some of the queue fillers are among them.
  char port_hex[8];
  std::snprintf(port_hex, sizeof port_hex, "%04X", queue.port());
  auto syn_sent = [&] {
    int n = 0;
    std::ifstream tcp("/proc/net/tcp");
    for (std::string line; std::getline(tcp, line);)
      if (line.find(std::string(":") + port_hex + " 02 ") != std::string::npos) ++n;
    return n;
  };
  const int fillers_waiting = syn_sent();
  std::optional<Result<NodeSnapshot>> node;
  std::thread caller([&] { node = watcher.get_node(30s); });
  bool connecting = test::eventually([&] { return syn_sent() > fillers_waiting; }, 5s);
  EXPECT_TRUE(connecting) << "no SYN_SENT socket to port " << port_hex;
  auto stop_at = std::chrono::steady_clock::now();
  watcher.stop();
  caller.join();
  EXPECT_LT(std::chrono::steady_clock::now() - stop_at, 1s);
  ASSERT_TRUE(node.has_value());
  ASSERT_FALSE(node->ok());
  EXPECT_NE(node->error().message.find("stopping"), std::string::npos) << node->error().message;
}

// Regression (issue 13 item 3, in the watch thread): a Node with fields of the wrong type threw
// out of the parser and terminated the process. Now each fault is a logged failure, and once the
// server answers properly again the watch resumes and reports the current labels.
TEST(NodeWatcherChaos, ResumesAfterEveryKindOfFault) {
  test::FakeApiServer api("n1", {{kLabel, "a"}});
  NodeWatcher watcher(ApiServer{api.url(), "", "", ""}, "n1");
  watcher.set_timing(fast_timing());
  Seen seen;
  watcher.start({}, seen.callback());
  ASSERT_TRUE(seen.wait_for("a", 5s));
  ASSERT_TRUE(api.wait_watching(5s));
  int round = 0;
  for (Fault fault : {Fault::Status500, Fault::Status401, Fault::Status410, Fault::ErrorEvent410, Fault::Garbage,
                      Fault::WrongTypes, Fault::EndAtOnce, Fault::EndlessLine, Fault::Stall}) {
    SCOPED_TRACE(static_cast<int>(fault));
    api.set_fault(fault);
    int before = api.requests();
    api.end_watches();  // the next request meets the fault
    // A stalled request stays in flight (until the fault is cleared); every other fault is retried.
    ASSERT_TRUE(api.wait_requests(before + (fault == Fault::Stall ? 1 : 3), 10s)) << "the watcher stopped retrying";
    api.set_fault(Fault::None);
    std::string value = "after-" + std::to_string(round++);
    api.set_labels({{kLabel, value}});
    ASSERT_TRUE(seen.wait_for(value, 10s)) << "the watch did not resume";
  }
  // The endless line was dropped at the 4 MiB cap, not buffered to the server's 64 MiB.
  EXPECT_GT(api.endless_bytes_sent(), 0u);
  EXPECT_LT(api.endless_bytes_sent(), 32u * 1024 * 1024);
  auto t0 = std::chrono::steady_clock::now();
  watcher.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
}

// A server that ends every watch at once must not make the watcher spin: it backs off.
TEST(NodeWatcherChaos, AWatchThatEndsAtOnceIsRetriedWithBackoff) {
  test::FakeApiServer api("n1", {});
  api.set_fault(Fault::EndAtOnce);
  NodeWatcher watcher(ApiServer{api.url(), "", "", ""}, "n1");
  auto timing = fast_timing();
  timing.first_backoff = 100ms;
  timing.max_backoff = 200ms;
  watcher.set_timing(timing);
  watcher.start({}, [](const NodeWatcher::Labels&) {});
  ASSERT_TRUE(api.wait_requests(4, 5s));
  auto t0 = std::chrono::steady_clock::now();
  int before = api.requests();
  ASSERT_TRUE(api.wait_requests(before + 3, 5s));
  // Three more requests (a GET and a watch per round) took at least one backoff.
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 100ms);
  watcher.stop();
}

TEST(NodeWatcherChaos, RefusedThenServedOnThatPortResumes) {
  int port = test::FakeApiServer::free_port();
  ASSERT_GT(port, 0);
  NodeWatcher watcher(ApiServer{"http://127.0.0.1:" + std::to_string(port), "", "", ""}, "n1");
  watcher.set_timing(fast_timing());
  Seen seen;
  watcher.start({}, seen.callback());
  test::FakeApiServer api("n1", {{kLabel, "late"}}, port);
  ASSERT_TRUE(api.bound());
  ASSERT_TRUE(seen.wait_for("late", 10s));
}

// Regression (issue 13 "Also"): the service-account token was read once; projected tokens rotate
// (about hourly), so every request failed with 401 afterwards. It is read again for each request.
TEST(NodeWatcherToken, RotatedTokenFileIsReadForEachRequest) {
  std::string dir = ::testing::TempDir() + "/sa-rotate";
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/token") << "first\n";
  test::FakeApiServer api("n1", {{kLabel, "x"}});
  api.require_token("first");
  NodeWatcher watcher(ApiServer{api.url(), "first", "", dir + "/token"}, "n1");
  ASSERT_TRUE(watcher.get_node(2s).ok());
  std::ofstream(dir + "/token", std::ios::trunc) << "second\n";  // the kubelet rotated it
  api.require_token("second");
  auto node = watcher.get_node(2s);
  ASSERT_TRUE(node.ok()) << node.error().message;
  // Unreadable now: the last good token is kept (and the problem logged), not an empty one.
  std::filesystem::remove(dir + "/token");
  ASSERT_TRUE(watcher.get_node(2s).ok());
  EXPECT_EQ(api.authorizations().back(), "Bearer second");
}

TEST(ReadTokenFile, RefusesWhatIsNotASmallRegularFile) {
  std::string dir = ::testing::TempDir() + "/sa-bad";
  std::filesystem::create_directories(dir);
  EXPECT_FALSE(read_token_file(dir).ok());  // a directory
  EXPECT_FALSE(read_token_file(dir + "/missing").ok());
  std::ofstream(dir + "/big") << std::string(kMaxTokenBytes + 1, 'a');
  EXPECT_FALSE(read_token_file(dir + "/big").ok());
  std::ofstream(dir + "/empty") << "\n";
  EXPECT_FALSE(read_token_file(dir + "/empty").ok());
  ::unlink((dir + "/fifo").c_str());
  ASSERT_EQ(::mkfifo((dir + "/fifo").c_str(), 0600), 0);
  EXPECT_FALSE(read_token_file(dir + "/fifo").ok());  // refused at once, never blocks
}

}  // namespace
}  // namespace kgpu::kube
