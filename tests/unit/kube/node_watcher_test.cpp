// NodeWatcher against a fake API server over loopback HTTP.
#include "kube/node_watcher.h"

#include <gtest/gtest.h>

#include <condition_variable>

#include "support/fake_api_server.h"

namespace kgpu::kube {
namespace {

using namespace std::chrono_literals;
const std::string kLabel = "nvidia.com/device-plugin.config";

TEST(NodeWatcher, GetsTheNodeThenReportsEachLabelChange) {
  test::FakeApiServer api("n1", {{kLabel, "a"}});
  NodeWatcher watcher(ApiServer{api.url(), "", ""}, "n1");
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
  NodeWatcher watcher(ApiServer{"http://127.0.0.1:1", "", ""}, "n1");
  auto node = watcher.get_node(1s);
  ASSERT_FALSE(node.ok());
  EXPECT_NE(node.error().message.find("/api/v1/nodes/n1"), std::string::npos) << node.error().message;
}

TEST(NodeWatcher, StopsPromptlyWhileWatching) {
  test::FakeApiServer api("n1", {});
  NodeWatcher watcher(ApiServer{api.url(), "", ""}, "n1");
  watcher.start({}, [](const NodeWatcher::Labels&) {});
  ASSERT_TRUE(api.wait_watching(5s));
  auto t0 = std::chrono::steady_clock::now();
  watcher.stop();
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 2s);
}

}  // namespace
}  // namespace kgpu::kube
