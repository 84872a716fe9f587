// The daemon in-process against the in-process kubelet simulator, over real unix sockets, with a
// discovery function instead of NVML: registration, health updates, kubelet restarts, discovery
// retries and resource removal.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <atomic>
#include <memory>
#include <filesystem>
#include <fstream>
#include <functional>
#include <latch>
#include <mutex>
#include <sstream>
#include <thread>

#include <spdlog/sinks/ostream_sink.h>
#include <spdlog/spdlog.h>

#include "deviceplugin/v1beta1/api.pb.h"
#include "rpc/server.h"
#include "server/daemon.h"
#include "sim/kubelet_sim.h"
#include "support/eventually.h"
#include "support/forked_peer.h"
#include "support/stuck_grpc_peer.h"

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
  // kubelet.sock served by a Registration that accepts Register (counted in `registered`) and never
  // dials back: a kubelet whose gRPC cannot talk to ours. Null when it cannot be served.
  std::unique_ptr<rpc::Server> silent_kubelet(std::atomic<int>& registered) {
    auto transport = rpc::Server::start();
    if (!transport) return nullptr;
    auto registration = std::make_shared<rpc::Service>();
    registration->unary("/v1beta1.Registration/Register", [&registered](std::string_view, rpc::Responder r) {
      registered++;
      r.reply(v1beta1::Empty{}.SerializeAsString());
    });
    auto fd = rpc::listen_unix(dir + "/kubelet.sock");
    if (!fd || !(*transport)->serve(std::move(*fd), registration)) return nullptr;
    return std::move(*transport);
  }

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
  // Shared with the observer: the daemon thread may still call it after this body returns (until TearDown stops it).
  auto observed = std::make_shared<std::atomic<int>>(0);
  run_daemon();
  daemon->on_plan_changed([observed](const Config&, const Inventory&, const ResourcePlan&) { (*observed)++; });
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
  EXPECT_TRUE(eventually([&] { return observed->load() >= 1; }, 10s));
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

// A plan filter that renames the GPU resource while `renamed` is set: a reload then adds a resource
// (and removes nvidia.com/gpu) without needing a sharing config.
const std::string kOther = "example.com/other";
ResourcePlan rename_gpu(ResourcePlan plan) {
  for (auto& r : plan.resources)
    if (r.name == kGpu) r.name = kOther;
  return plan;
}

bool plan_has(const StatePtr& s, const std::string& name) { return s && s->plan.find(name) != nullptr; }

// Issue 13 item 2: a reload added a resource whose server could not bind (a directory in its
// socket's place); the daemon used to commit the plan without a server, and the next reload that
// removed the resource dereferenced the missing server (SIGSEGV).
TEST_F(DaemonTest, ReloadRemovingAResourceWhoseServerNeverStartedDoesNotCrash) {
  std::atomic<bool> renamed{false};
  options.plan_filter = [&](const Config&, ResourcePlan plan) { return renamed ? rename_gpu(std::move(plan)) : plan; };
  const std::string blocked = dir + "/kgpu-example.com-other.sock";
  ASSERT_TRUE(std::filesystem::create_directory(blocked));
  ASSERT_TRUE(sim->start().ok());
  run_daemon();
  ASSERT_TRUE(wait_healthy(2));

  renamed = true;
  daemon->request_reload();
  ASSERT_TRUE(eventually([&] { return plan_has(daemon->state(), kOther); }, 10s));
  renamed = false;
  daemon->request_reload();
  ASSERT_TRUE(eventually([&] { return plan_has(daemon->state(), kGpu) && !plan_has(daemon->state(), kOther); }, 10s));
  // Still alive and serving: nvidia.com/gpu is back, registered a second time.
  ASSERT_TRUE(wait_healthy(2, 2));
  EXPECT_TRUE(sim->allocate(kGpu, {"GPU-0"}).ok());
  EXPECT_TRUE(std::filesystem::is_directory(blocked));  // not ours: left alone
}

// ... and such a resource is retried (on the register timer's backoff) and served and registered
// once the obstacle is gone.
TEST_F(DaemonTest, ResourceWhoseServerCannotStartIsRetriedUntilItServes) {
  options.plan_filter = [&](const Config&, ResourcePlan plan) { return rename_gpu(std::move(plan)); };
  const std::string blocked = dir + "/kgpu-example.com-other.sock";
  ASSERT_TRUE(std::filesystem::create_directory(blocked));
  ASSERT_TRUE(sim->start().ok());
  run_daemon();  // a transient failure at start-up keeps the daemon up
  ASSERT_TRUE(eventually([&] { return plan_has(daemon->state(), kOther); }, 10s));
  EXPECT_EQ(sim->snapshot().registrations, 0);
  std::filesystem::remove(blocked);
  ASSERT_TRUE(sim->wait_for(
      [&](const sim::Snapshot& s) {
        const auto* r = s.find(kOther);
        return r && r->connected && r->healthy_count() == 2;
      },
      10s));
  EXPECT_TRUE(std::filesystem::is_socket(dir + "/kgpu-example.com-other.sock"));
}

// A resource socket path that can never fit is a config error at start-up: exit 1, nothing left behind.
TEST_F(DaemonTest, ResourceSocketPathTooLongAtStartUpExitsOne) {
  options.plan_filter = [&](const Config&, ResourcePlan plan) {
    for (auto& r : plan.resources) r.name = "example.com/" + std::string(120, 'x');
    return plan;
  };
  ASSERT_TRUE(sim->start().ok());
  Daemon d(options);
  EXPECT_EQ(d.run(), 1);
  EXPECT_EQ(sim->snapshot().registrations, 0);
}

// Captures what the daemon logs (the default logger) while alive. Add it before the daemon runs
// and stop the daemon before it goes: spdlog's sink list is not guarded against concurrent logs.
class LogCapture {
 public:
  LogCapture() : sink_(std::make_shared<spdlog::sinks::ostream_sink_mt>(out_)) {
    spdlog::default_logger()->sinks().push_back(sink_);
  }
  ~LogCapture() {
    auto& sinks = spdlog::default_logger()->sinks();
    sinks.erase(std::remove(sinks.begin(), sinks.end(), sink_), sinks.end());
  }
  size_t count(const std::string& needle) {
    std::lock_guard lock(mu_);
    sink_->flush();
    std::string text = out_.str();
    size_t n = 0;
    for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
    return n;
  }

 private:
  std::mutex mu_;
  std::ostringstream out_;
  std::shared_ptr<spdlog::sinks::ostream_sink_mt> sink_;
};

// Runs an empty task on the daemon's loop and waits for it: every event queued before this call
// (inotify included: the loop reads the directory watch before posted work) has been handled.
void round_trip(Daemon& daemon) {
  std::latch done(1);
  daemon.update_inventory([&](const Inventory& inv) {
    done.count_down();
    return inv;
  });
  done.wait();
}

// Issue 16 item 5: each kubelet restart was logged twice ("kubelet restart seen (our socket was
// deleted); serving and registering again" a second time, when kubelet.sock's creation arrived
// after we had already registered with it). Each thing that happened is logged once.
TEST_F(DaemonTest, KubeletRestartIsLoggedOnce) {
  LogCapture logs;
  ASSERT_TRUE(sim->start().ok());
  run_daemon();
  ASSERT_TRUE(wait_healthy(2));
  ASSERT_TRUE(sim->restart().ok());
  ASSERT_TRUE(wait_healthy(2, 2));
  round_trip(*daemon);
  EXPECT_LE(logs.count("kubelet restart seen"), 1u);
  EXPECT_LE(logs.count("was deleted"), 1u);
  EXPECT_GE(logs.count("kubelet restart seen") + logs.count("was deleted"), 1u);
  EXPECT_EQ(sim->snapshot().find(kGpu)->registrations, 2);
  daemon->stop();  // before `logs` leaves the logger: nothing may log while its sink is removed
  runner.join();
}

// Issue 20 item 6: when the directory watch's queue overflowed, only pending registrations were
// retried, so a kubelet restart hidden in the lost events (kubelet.sock recreated) never got a
// registration. Now an overflow re-checks kubelet.sock's identity and our sockets.
TEST_F(DaemonTest, KubeletRestartLostInAnInotifyOverflowIsStillSeen) {
  ASSERT_TRUE(sim->start().ok());
  run_daemon();
  ASSERT_TRUE(wait_healthy(2));
  size_t max_events = 16384;
  std::ifstream("/proc/sys/fs/inotify/max_queued_events") >> max_events;
  ASSERT_LT(max_events, 1000000u) << "cannot overflow this host's inotify queue in a test";

  // Hold the loop so the watch's queue fills up, then restart the kubelet without touching our
  // socket (its events are lost in the overflow).
  std::latch release(1), held(1);
  daemon->update_inventory([&](const Inventory& inv) {
    held.count_down();
    release.wait();
    return inv;
  });
  held.wait();
  const std::string flood = dir + "/flood";
  for (size_t i = 0; i < max_events / 2 + 100; ++i) {
    std::ofstream(flood) << "";
    std::filesystem::remove(flood);
  }
  sim->stop();
  ASSERT_TRUE(sim->start().ok());
  release.count_down();
  ASSERT_TRUE(sim->wait_for(
      [&](const sim::Snapshot& s) {
        const auto* r = s.find(kGpu);
        return r && r->registrations >= 2 && r->connected;
      },
      10s));
  // The watch works again after the overflow: a plain kubelet restart is still seen.
  ASSERT_TRUE(sim->restart().ok());
  ASSERT_TRUE(wait_healthy(2, 3));
}

// Issue 26, item 4: a kubelet whose gRPC cannot talk to ours accepts Register and then never opens
// ListAndWatch; without a warning the node silently has zero devices. A Registration server that
// answers and never dials back plays it.
TEST_F(DaemonTest, AKubeletThatNeverOpensListAndWatchIsWarnedAbout) {
  LogCapture logs;
  std::atomic<int> registered{0};
  auto transport = silent_kubelet(registered);
  ASSERT_TRUE(transport);
  options.first_list_deadline = 50ms;
  run_daemon();
  ASSERT_TRUE(test::eventually([&] { return registered.load() >= 1; }, 10s));
  EXPECT_TRUE(test::eventually([&] { return logs.count("has not opened ListAndWatch") == 1; }, 10s));
  daemon->stop();
  runner.join();
  EXPECT_EQ(logs.count("nvidia.com/gpu: the kubelet accepted Register"), 1u);
}

// Issue 39, item 1: another local peer's ListAndWatch used to count as the kubelet's (the check
// compared a count of every stream with the count at Register), so a peer that grabbed our socket
// silenced the warning. Here a peer in its own process opens ListAndWatch once kgpu has registered,
// and the kubelet never dials back: the warning still fires.
TEST_F(DaemonTest, AnotherPeersListAndWatchDoesNotSilenceTheWarning) {
  LogCapture logs;
  std::atomic<int> registered{0};
  auto transport = silent_kubelet(registered);
  ASSERT_TRUE(transport);
  options.first_list_deadline = 2s;
  run_daemon();
  ASSERT_TRUE(test::eventually([&] { return logs.count("registered with the kubelet") >= 1; }, 10s));
  const std::string socket = dir + "/kgpu-nvidia.com-gpu.sock";
  test::ForkedPeer intruder([&socket](int report, int control) {
    test::StuckPeer peer(socket);
    char served = peer.connected() && peer.wait_response(5000) ? '1' : '0';
    [[maybe_unused]] auto n = ::write(report, &served, 1);
    test::ForkedPeer::wait_for_end(control);
  });
  EXPECT_EQ(intruder.reports(1, 10s), "1") << "the other peer's ListAndWatch was not served";
  EXPECT_TRUE(test::eventually([&] { return logs.count("has not opened ListAndWatch") == 1; }, 10s));
  daemon->stop();
  runner.join();
}

}  // namespace
}  // namespace kgpu::server
