// End to end: the per-node config label read from an API server that misbehaves. kgpu must keep
// serving (the default config, or the last one the label chose), resume the watch once the server
// answers properly, and neither start-up nor exit may wait on a server that stalls.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>

#include "e2e/sim_fixture.h"
#include "support/fake_api_server.h"

namespace kgpu::test {
namespace {

using Fault = FakeApiServer::Fault;
const std::string kGpu = "nvidia.com/gpu";
const std::string kLabel = "nvidia.com/device-plugin.config";

class ApiServerChaosE2E : public SimE2E {
 protected:
  void SetUp() override {
    SimE2E::SetUp();
    dir = work.file("available-configs");
    work.write("available-configs/default", "version: v1\n");
    work.write("available-configs/shared",
               "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2\n");
  }
  // The plugin, pointed at `api_url` for its Node's label.
  std::unique_ptr<ChildProcess> start_with_api(const std::string& api_url) {
    PluginOptions options;
    options.env = {{"NODE_NAME", "gpu-node-1"},       {"KGPU_CONFIG_DIR", dir},
                   {"KGPU_CONFIG_DEFAULT", "default"}, {"KGPU_NODE_CONFIG_LABEL", kLabel},
                   {"KGPU_KUBE_API", api_url},         {"CONFIG_FILE", dir + "/default"}};
    return start(options);
  }
  // Sends SIGTERM and returns how long the plugin took to exit (a minute: it did not).
  static std::chrono::milliseconds exit_time(ChildProcess& plugin) {
    auto t0 = std::chrono::steady_clock::now();
    plugin.signal(SIGTERM);
    auto rc = plugin.wait_exit(std::chrono::seconds(60));
    EXPECT_TRUE(rc.has_value());
    if (rc) {
      EXPECT_EQ(*rc, 0) << plugin.stderr_text();
    }
    return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  }

  static size_t count(const std::string& text, const std::string& needle) {
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  }

  std::string dir;
};

// Connection refused at start-up: the default config is served; once an API server answers on
// that address, the watch picks the label up.
TEST_F(ApiServerChaosE2E, RefusedAtStartThenTheLabelAppliesOnceTheServerAnswers) {
  int port = FakeApiServer::free_port();
  ASSERT_GT(port, 0);
  auto plugin = start_with_api("http://127.0.0.1:" + std::to_string(port));
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  FakeApiServer api("gpu-node-1", {{kLabel, "shared"}}, port);
  ASSERT_TRUE(api.bound());
  ASSERT_TRUE(wait_healthy(kGpu, 16)) << diagnostics(*plugin);
  EXPECT_LT(exit_time(*plugin), std::chrono::seconds(2));
}

// Regression (issue 13 item 3): a Node answer with a field of the wrong type ("kind":5) threw out
// of the parser and killed kgpu at start-up. Errors, garbage and wrong types are now logged and
// retried; the plugin keeps serving and follows the label once the server recovers.
TEST_F(ApiServerChaosE2E, ErrorsGarbageAndWrongTypesNeverStopServing) {
  FakeApiServer api("gpu-node-1", {{kLabel, "shared"}});
  api.set_fault(Fault::WrongTypes);
  auto plugin = start_with_api(api.url());
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);  // the default: the label is unknown
  // One failed request each (the watcher backs off 1 s, 2 s, 4 s...; the unit tests cover more).
  for (Fault fault : {Fault::Garbage, Fault::Status500}) {
    int before = api.requests();
    api.set_fault(fault);
    ASSERT_TRUE(api.wait_requests(before + 1, std::chrono::seconds(60))) << diagnostics(*plugin);
    ASSERT_TRUE(plugin->running()) << diagnostics(*plugin);
  }
  api.set_fault(Fault::None);
  ASSERT_TRUE(wait_healthy(kGpu, 16)) << diagnostics(*plugin);  // resumed: the label chose "shared"
  ASSERT_TRUE(api.wait_watching(std::chrono::seconds(20)));

  // Watch-level faults while serving "shared": an ERROR 410 event and a line that never ends.
  int watches = api.watches_opened();  // healthy watches only: none open while a fault is set
  int round = 0;
  for (Fault fault : {Fault::ErrorEvent410, Fault::EndlessLine}) {
    // First an event on the open watch (an unrelated label): a watch that delivered events is
    // healthy, so the watcher's backoff starts again from 1 s when the fault hits.
    size_t logged = count(plugin->stderr_text(), "per-node config: ");
    api.set_labels({{kLabel, "shared"}, {"round", std::to_string(++round)}});
    ASSERT_TRUE(wait_until([&] { return count(plugin->stderr_text(), "per-node config: ") > logged; },
                           std::chrono::seconds(20)))
        << diagnostics(*plugin);
    int before = api.requests();
    api.set_fault(fault);
    api.end_watches();
    ASSERT_TRUE(api.wait_requests(before + 2, std::chrono::seconds(60))) << diagnostics(*plugin);
    api.set_fault(Fault::None);
  }
  EXPECT_LT(api.endless_bytes_sent(), 32u * 1024 * 1024);  // dropped at the 4 MiB line cap
  ASSERT_TRUE(api.wait_watching(std::chrono::seconds(60), watches + 1)) << diagnostics(*plugin);
  api.set_labels({});  // the resumed watch sees the label go: back to the default
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  EXPECT_EQ(sim->snapshot().find(kGpu)->registrations, 1);  // never restarted or re-registered
  EXPECT_NE(plugin->stderr_text().find("node labels:"), std::string::npos);  // the failures were logged
  EXPECT_LT(exit_time(*plugin), std::chrono::seconds(2));
}

// Regression (issue 13 "Also"): a stalled API server delayed start-up by ~6 s and exit by ~9 s
// (an uninterruptible GET whose read timeout restarted with every byte).
TEST_F(ApiServerChaosE2E, StalledServerDelaysNeitherStartNorExit) {
  FakeApiServer api("gpu-node-1", {{kLabel, "shared"}});
  api.set_fault(Fault::Stall);
  auto t0 = std::chrono::steady_clock::now();
  auto plugin = start_with_api(api.url());
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);  // started on the default
  auto started = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  RecordProperty("start_ms_with_stalled_api_server", static_cast<int>(started.count()));
  ASSERT_TRUE(api.wait_requests(2, std::chrono::seconds(20)));  // the watcher's own GET is stalled too
  auto exit_ms = exit_time(*plugin);
  RecordProperty("exit_ms_with_stalled_api_server", static_cast<int>(exit_ms.count()));
  EXPECT_LT(exit_ms, std::chrono::seconds(2)) << diagnostics(*plugin);
}

}  // namespace
}  // namespace kgpu::test
