// The daemon in-process against the in-process kubelet simulator, over real unix sockets, with a
// discovery function instead of NVML: registration, health updates, kubelet restarts, discovery
// retries and resource removal.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <thread>

#include "server/daemon.h"
#include "server/kubelet_sim.h"

namespace kgpu::server {
namespace {
using namespace std::chrono_literals;
const std::string kGpu = "nvidia.com/gpu";

// Polls a condition against a deadline (for state not behind the simulator's condition variable).
bool eventually(const std::function<bool()>& pred, std::chrono::milliseconds timeout) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  while (!pred()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

Inventory two_gpus() {
  Inventory inv;
  inv.driver_version = "550.54.15";
  for (int i = 0; i < 2; ++i) {
    Gpu g;
    g.index = i;
    g.uuid = "GPU-" + std::to_string(i);
    g.product = "NVIDIA A100-SXM4-40GB";
    g.minor = i;
    g.numa_node = i;
    g.pci_bus_id = "00000000:0" + std::to_string(i) + ":00.0";
    g.device_nodes = {{"/dev/nvidia" + std::to_string(i)}};
    inv.gpus.push_back(g);
  }
  inv.topology.links.assign(2, std::vector<GpuLink>(2));
  return inv;
}

class DaemonTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char templ[] = "/tmp/kgpu-daemon-XXXXXX";
    ASSERT_NE(::mkdtemp(templ), nullptr);
    dir = templ;
    sim = std::make_unique<sim::KubeletSim>(dir);
    options.config.kubelet_socket = dir + "/kubelet.sock";
    options.discover = [this](const Config&) -> Result<Inventory> {
      if (discovery_failures.load() > 0) {
        discovery_failures--;
        return Error::unavailable("libnvidia-ml.so.1 not found");
      }
      return two_gpus();
    };
    options.register_backoff_initial = 5ms;
    options.discovery_backoff_initial = 5ms;
  }
  void TearDown() override {
    if (daemon) daemon->stop();
    if (runner.joinable()) runner.join();
    sim->stop();
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  void run_daemon() {
    daemon = std::make_unique<Daemon>(options);
    runner = std::thread([this] { exit_code = daemon->run(); });
  }
  bool wait_healthy(size_t n, int registrations = 1) {
    return sim->wait_for(
        [&](const sim::Snapshot& s) {
          const auto* r = s.find(kGpu);
          return r && r->connected && r->registrations >= registrations && r->healthy_count() == n &&
                 r->devices.size() == 2;
        },
        10s);
  }

  std::string dir;
  std::unique_ptr<sim::KubeletSim> sim;
  DaemonOptions options;
  std::atomic<int> discovery_failures{0};
  std::unique_ptr<Daemon> daemon;
  std::thread runner;
  std::atomic<int> exit_code{-1};
};

TEST_F(DaemonTest, RegistersServesAndAllocates) {
  ASSERT_TRUE(sim->start().ok());
  run_daemon();
  ASSERT_TRUE(wait_healthy(2));
  auto snap = sim->snapshot();
  EXPECT_EQ(snap.find(kGpu)->endpoint, "kgpu-nvidia.com-gpu.sock");
  EXPECT_EQ(snap.find(kGpu)->devices[1].numa_nodes, std::vector<int64_t>{1});
  auto edits = sim->allocate(kGpu, {"GPU-1"});
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  EXPECT_EQ(edits->envs["NVIDIA_VISIBLE_DEVICES"], "GPU-1");
  auto pick = sim->preferred(kGpu, {"GPU-0", "GPU-1"}, {}, 1);
  ASSERT_TRUE(pick.ok()) << pick.error().message;
  EXPECT_EQ(pick->size(), 1u);
}

TEST_F(DaemonTest, HealthChangePushesListAndWatchOnTheSameEndpoint) {
  ASSERT_TRUE(sim->start().ok());
  std::atomic<int> observed{0};
  run_daemon();
  daemon->on_plan_changed([&](const Config&, const Inventory&, const ResourcePlan&) { observed++; });
  ASSERT_TRUE(wait_healthy(2));
  int updates_before = sim->snapshot().find(kGpu)->updates;
  daemon->update_inventory([](const Inventory& inv) {
    Inventory next = inv;
    next.gpus[1].health = {false, "XID 79"};
    return next;
  });
  ASSERT_TRUE(wait_healthy(1));
  auto snap = sim->snapshot();
  EXPECT_EQ(snap.find(kGpu)->registrations, 1);  // unchanged endpoint, no re-registration
  EXPECT_GT(snap.find(kGpu)->updates, updates_before);
  EXPECT_EQ(snap.find(kGpu)->devices[1].health, "Unhealthy");
  EXPECT_TRUE(eventually([&] { return observed.load() >= 1; }, 10s));
}

TEST_F(DaemonTest, ReRegistersAfterKubeletRestart) {
  ASSERT_TRUE(sim->start().ok());
  run_daemon();
  ASSERT_TRUE(wait_healthy(2));
  ASSERT_TRUE(sim->restart().ok());
  ASSERT_TRUE(wait_healthy(2, 2));
  EXPECT_TRUE(sim->allocate(kGpu, {"GPU-0"}).ok());
}

TEST_F(DaemonTest, RegistersWhenTheKubeletComesUpLater) {
  run_daemon();
  // The daemon serves before any kubelet exists; it must register as soon as kubelet.sock appears.
  ASSERT_TRUE(sim->start().ok());
  ASSERT_TRUE(wait_healthy(2));
}

TEST_F(DaemonTest, DiscoveryFailureWithFailOnInitErrorExitsOne) {
  discovery_failures = 1;
  options.config.fail_on_init_error = true;
  ASSERT_TRUE(sim->start().ok());
  Daemon d(options);
  EXPECT_EQ(d.run(), 1);
  EXPECT_EQ(sim->snapshot().registrations, 0);
}

TEST_F(DaemonTest, DiscoveryRetriesUntilTheDriverAppears) {
  discovery_failures = 3;
  options.config.fail_on_init_error = false;
  ASSERT_TRUE(sim->start().ok());
  run_daemon();
  ASSERT_TRUE(wait_healthy(2));
  EXPECT_EQ(discovery_failures.load(), 0);
}

TEST_F(DaemonTest, ResourceWithNoDevicesLeftIsStoppedAndItsSocketRemoved) {
  ASSERT_TRUE(sim->start().ok());
  run_daemon();
  ASSERT_TRUE(wait_healthy(2));
  daemon->update_inventory([](const Inventory&) { return Inventory{}; });
  ASSERT_TRUE(sim->wait_for([](const sim::Snapshot& s) { return !s.find(kGpu)->connected; }, 10s));
  // The stream ends before the server finishes shutting down and removes the socket.
  EXPECT_TRUE(eventually([&] { return !std::filesystem::exists(dir + "/kgpu-nvidia.com-gpu.sock"); }, 10s));
}

TEST_F(DaemonTest, StopRemovesSocketsAndReturnsZero) {
  ASSERT_TRUE(sim->start().ok());
  run_daemon();
  ASSERT_TRUE(wait_healthy(2));
  daemon->stop();
  runner.join();
  EXPECT_EQ(exit_code.load(), 0);
  EXPECT_FALSE(std::filesystem::exists(dir + "/kgpu-nvidia.com-gpu.sock"));
  EXPECT_TRUE(std::filesystem::exists(dir + "/kubelet.sock"));
}

}  // namespace
}  // namespace kgpu::server
