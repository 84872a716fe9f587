#include "health/monitor.h"

#include <condition_variable>
#include <mutex>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "fake-nvml/fake_nvml_control.h"
#include "support/eventually.h"
#include "unit/nvml/fake_fleet.h"

namespace kgpu {
namespace {

using namespace std::chrono_literals;
using fake_nvml::Control;
using testing::FakeNode;
using testing::fleet_path;

// Collects callback events; tests wait on a condition with a deadline, never a sleep.
class Collector {
 public:
  HealthMonitor::Callback callback() {
    return [this](const HealthEvent& e) {
      std::lock_guard lock(mu_);
      events_.push_back(e);
      cv_.notify_all();
    };
  }
  bool wait_for(size_t n, std::chrono::milliseconds timeout = 5s) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return events_.size() >= n; });
  }
  bool wait_for_kind(HealthEvent::Kind kind, const std::string& uuid, std::chrono::milliseconds timeout = 5s) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return count_locked(kind, uuid) > 0; });
  }
  size_t count(HealthEvent::Kind kind, const std::string& uuid) {
    std::lock_guard lock(mu_);
    return count_locked(kind, uuid);
  }
  std::vector<HealthEvent> events() {
    std::lock_guard lock(mu_);
    return events_;
  }

 private:
  size_t count_locked(HealthEvent::Kind kind, const std::string& uuid) const {
    size_t n = 0;
    for (const auto& e : events_) n += (e.kind == kind && e.gpu_uuid == uuid);
    return n;
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::vector<HealthEvent> events_;
};

using test::eventually;

HealthMonitorOptions fast_options() {
  HealthMonitorOptions o;
  o.idle_wait_ms = 50;  // keeps stop() prompt in tests; production uses minutes
  o.stop_grace = 2s;
  o.config.recovery_probe_interval_ms = 10;
  o.config.recovery_probe_max_interval_ms = 40;
  o.config.recovery_quiet_period_ms = 150;
  return o;
}

class MonitorTest : public ::testing::Test {
 protected:
  void SetUp() override {}
  Inventory start_node(const std::string& fleet) {
    ctl_ = std::make_unique<Control>(dir_.path() + "/nvml.control");
    node_ = std::make_unique<FakeNode>(fleet, ctl_->path());
    EXPECT_TRUE(node_->ready()) << node_->problem();
    auto inv = discover_nvidia(node_->nvml(), node_->options());
    EXPECT_TRUE(inv.ok()) << inv.error().message;
    return inv.ok() ? *inv : Inventory{};
  }
  void start_monitor(const Inventory& inv, HealthMonitorOptions options = fast_options()) {
    monitor_ = std::make_unique<HealthMonitor>(node_->shared(), options, collector_.callback());
    auto st = monitor_->start(inv);
    ASSERT_TRUE(st.ok()) << st.error().message;
  }
  void TearDown() override {
    if (monitor_) monitor_->stop();
    monitor_.reset();
    if (node_) {
      EXPECT_EQ(node_->nvml().init_count(), 0) << "the monitor must release NVML when stopped";
    }
  }

  testing::TempDir dir_;
  std::unique_ptr<Control> ctl_;
  std::unique_ptr<FakeNode> node_;
  Collector collector_;
  std::unique_ptr<HealthMonitor> monitor_;
};

TEST_F(MonitorTest, FatalXidOnOneGpuReachesTheCallback) {
  Inventory inv = start_node(fleet_path("dgx-a100.yaml"));
  ASSERT_EQ(inv.gpus.size(), 8u);
  start_monitor(inv);
  const std::string uuid = inv.gpus[3].uuid;
  ASSERT_TRUE(ctl_->wait_registered(uuid, 5s));
  EXPECT_EQ(monitor_->stats().watched_gpus, 8u);
  ASSERT_TRUE(ctl_->inject_xid(uuid, 79));
  ASSERT_TRUE(collector_.wait_for(1));
  auto events = collector_.events();
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].gpu_uuid, uuid);
  EXPECT_EQ(events[0].kind, HealthEvent::Kind::Xid);
  EXPECT_EQ(events[0].xid, 79u);
  EXPECT_FALSE(events[0].gpu_instance_id.has_value());
  // Fatal: tracked for a reset, never probed.
  EXPECT_EQ(monitor_->stats().unhealthy_tracked, 1u);
  EXPECT_EQ(monitor_->stats().probes, 0u);
}

// An XID the policy ignores is neither tracked nor probed; it is still passed on (in order), for
// DRA's informational taint, which apply_health_event records without a health change.
TEST_F(MonitorTest, IgnoredXidIsNotTrackedButPassedOnForTheInformationalTaint) {
  Inventory inv = start_node(fleet_path("pcie-t4x2.yaml"));
  start_monitor(inv);
  ASSERT_TRUE(ctl_->wait_registered(inv.gpus[1].uuid, 5s));
  ASSERT_TRUE(ctl_->inject_xid(inv.gpus[0].uuid, 13));
  ASSERT_TRUE(ctl_->inject_xid(inv.gpus[1].uuid, 48));
  ASSERT_TRUE(collector_.wait_for(2));
  auto events = collector_.events();
  ASSERT_EQ(events.size(), 2u);  // events are handled in order
  EXPECT_EQ(events[0].gpu_uuid, inv.gpus[0].uuid);
  EXPECT_EQ(events[0].xid, 13u);
  EXPECT_EQ(events[1].gpu_uuid, inv.gpus[1].uuid);
  EXPECT_EQ(monitor_->stats().events_ignored, 1u);
  EXPECT_EQ(monitor_->stats().unhealthy_tracked, 1u);  // 48 only
}

TEST_F(MonitorTest, EccDoubleBitEvent) {
  Inventory inv = start_node(fleet_path("pcie-t4x2.yaml"));
  start_monitor(inv);
  ASSERT_TRUE(ctl_->wait_registered(inv.gpus[0].uuid, 5s));
  ASSERT_TRUE(ctl_->inject_ecc_double(inv.gpus[0].uuid));
  ASSERT_TRUE(collector_.wait_for_kind(HealthEvent::Kind::EccDoubleBit, inv.gpus[0].uuid));
}

TEST_F(MonitorTest, MigInstanceEventsCarryTheInstanceIds) {
  Inventory inv = start_node(fleet_path("a100-mig-mixed.yaml"));
  start_monitor(inv);
  const Gpu& g = inv.gpus[0];
  ASSERT_EQ(g.mig_devices.size(), 3u);
  ASSERT_TRUE(ctl_->wait_registered(g.uuid, 5s));
  const MigDevice& m = g.mig_devices[1];
  ASSERT_TRUE(ctl_->inject_xid_mig(g.uuid, 48, static_cast<unsigned>(m.gpu_instance_id),
                                   static_cast<unsigned>(m.compute_instance_id)));
  ASSERT_TRUE(ctl_->inject_xid(g.mig_devices[2].uuid, 95));  // by MIG uuid
  ASSERT_TRUE(collector_.wait_for(2));
  auto events = collector_.events();
  EXPECT_EQ(events[0].gpu_uuid, g.uuid);
  EXPECT_EQ(events[0].gpu_instance_id, m.gpu_instance_id);
  EXPECT_EQ(events[0].compute_instance_id, m.compute_instance_id);
  EXPECT_EQ(events[1].gpu_instance_id, g.mig_devices[2].gpu_instance_id);
  // Applied to the inventory, only those MIG devices go unhealthy.
  auto up = apply_health_event(inv, events[0], HealthConfig{});
  ASSERT_EQ(up.changes.size(), 1u);
  EXPECT_EQ(up.changes[0].device, m.uuid);
}

TEST_F(MonitorTest, RecoversAfterTheQuietPeriodButNotWhileLost) {
  Inventory inv = start_node(fleet_path("pcie-t4x2.yaml"));
  start_monitor(inv);
  const std::string uuid = inv.gpus[0].uuid;
  ASSERT_TRUE(ctl_->wait_registered(uuid, 5s));
  ASSERT_TRUE(ctl_->set_lost(uuid, true));
  ASSERT_TRUE(ctl_->sync(5s));
  ASSERT_TRUE(ctl_->inject_xid(uuid, 74));  // recoverable
  ASSERT_TRUE(collector_.wait_for_kind(HealthEvent::Kind::Xid, uuid));
  // Several failed probes (backoff) and no recovery while the GPU does not answer.
  ASSERT_TRUE(eventually([&] { return monitor_->stats().probes >= 3; }));
  EXPECT_EQ(collector_.count(HealthEvent::Kind::Recovered, uuid), 0u);
  const auto back = std::chrono::steady_clock::now();
  ASSERT_TRUE(ctl_->set_lost(uuid, false));
  ASSERT_TRUE(collector_.wait_for_kind(HealthEvent::Kind::Recovered, uuid));
  EXPECT_GE(std::chrono::steady_clock::now() - back, std::chrono::milliseconds(150) - 50ms);
  EXPECT_EQ(monitor_->stats().unhealthy_tracked, 0u);
}

TEST_F(MonitorTest, UntilResetDevicesDoNotRecover) {
  Inventory inv = start_node(fleet_path("pcie-t4x2.yaml"));
  start_monitor(inv);
  ASSERT_TRUE(ctl_->wait_registered(inv.gpus[1].uuid, 5s));
  ASSERT_TRUE(ctl_->inject_xid(inv.gpus[0].uuid, 79));  // fatal
  ASSERT_TRUE(ctl_->inject_xid(inv.gpus[1].uuid, 74));  // recoverable
  ASSERT_TRUE(collector_.wait_for_kind(HealthEvent::Kind::Recovered, inv.gpus[1].uuid));
  EXPECT_EQ(collector_.count(HealthEvent::Kind::Recovered, inv.gpus[0].uuid), 0u);
  EXPECT_EQ(monitor_->stats().unhealthy_tracked, 1u);
}

TEST_F(MonitorTest, RecoveryCanBeDisabled) {
  Inventory inv = start_node(fleet_path("pcie-t4x2.yaml"));
  auto options = fast_options();
  options.config.recovery_enabled = false;
  start_monitor(inv, options);
  ASSERT_TRUE(ctl_->wait_registered(inv.gpus[1].uuid, 5s));
  ASSERT_TRUE(ctl_->inject_xid(inv.gpus[0].uuid, 74));
  ASSERT_TRUE(collector_.wait_for(1));
  EXPECT_EQ(monitor_->stats().unhealthy_tracked, 0u);
  EXPECT_EQ(monitor_->stats().probes, 0u);
}

constexpr const char* kLostAtStartFleet = R"(node: {driver_version: "550.54.15", cuda_driver_version: 12040}
defaults: {name: Tesla T4, architecture: turing, compute_capability: "7.5", memory: {total_mib: 15360}, pci: {device_id: 0x1EB8}}
gpus:
  - {index: 0, uuid: GPU-00000000-0000-4000-8000-000000000000, pci: {bus_id: "0000:3B:00.0"}}
  - {index: 1, uuid: GPU-22222222-2222-4222-8222-222222222222, pci: {bus_id: "0000:AF:00.0"},
     fail: {calls: {nvmlDeviceGetPciInfo: NVML_ERROR_GPU_IS_LOST}}}
)";

TEST_F(MonitorTest, GpuLostAtDiscoveryRecoversOnceItAnswers) {
  testing::write_file(dir_.path() + "/fleet.yaml", kLostAtStartFleet);
  Inventory inv = start_node(dir_.path() + "/fleet.yaml");
  ASSERT_EQ(inv.gpus.size(), 2u);
  ASSERT_FALSE(inv.gpus[1].health.healthy);
  start_monitor(inv);
  const std::string uuid = inv.gpus[1].uuid;
  ASSERT_TRUE(eventually([&] { return monitor_->stats().probes >= 2; }));
  EXPECT_EQ(collector_.count(HealthEvent::Kind::Recovered, uuid), 0u);
  ASSERT_TRUE(ctl_->fail_call(uuid, "nvmlDeviceGetPciInfo", 0));
  ASSERT_TRUE(collector_.wait_for_kind(HealthEvent::Kind::Recovered, uuid));
  // Once back, its events are registered too.
  ASSERT_TRUE(ctl_->wait_registered(uuid, 5s));
  auto up = apply_health_event(inv, collector_.events().back(), HealthConfig{});
  ASSERT_EQ(up.changes.size(), 1u);
  EXPECT_TRUE(up.inventory.gpus[1].health.healthy);
}

TEST_F(MonitorTest, SlowConsumerDoesNotBlockTheEventThread) {
  Inventory inv = start_node(fleet_path("dgx-a100.yaml"));
  std::mutex gate_mu;
  std::condition_variable gate_cv;
  bool open = false;
  size_t delivered = 0;
  monitor_ = std::make_unique<HealthMonitor>(node_->shared(), fast_options(), [&](const HealthEvent&) {
    std::unique_lock lock(gate_mu);
    gate_cv.wait(lock, [&] { return open; });
    ++delivered;
    gate_cv.notify_all();
  });
  ASSERT_TRUE(monitor_->start(inv).ok());
  ASSERT_TRUE(ctl_->wait_registered(inv.gpus[7].uuid, 5s));
  for (const auto& g : inv.gpus) ASSERT_TRUE(ctl_->inject_xid(g.uuid, 79));
  // All eight are read from NVML while the first callback is still blocked.
  ASSERT_TRUE(eventually([&] { return monitor_->stats().events_seen == 8; }));
  {
    std::unique_lock lock(gate_mu);
    EXPECT_EQ(delivered, 0u);
    open = true;
    gate_cv.notify_all();
    ASSERT_TRUE(gate_cv.wait_for(lock, 5s, [&] { return delivered == 8; }));
  }
}

TEST_F(MonitorTest, DisabledChecksStartNothing) {
  Inventory inv = start_node(fleet_path("pcie-t4x2.yaml"));
  auto options = fast_options();
  options.config.enabled = false;
  start_monitor(inv, options);
  EXPECT_FALSE(monitor_->running());
  EXPECT_EQ(node_->nvml().init_count(), 0);
}

TEST_F(MonitorTest, StopIsPromptAndReleasesNvml) {
  Inventory inv = start_node(fleet_path("pcie-t4x2.yaml"));
  start_monitor(inv);
  EXPECT_TRUE(monitor_->running());
  EXPECT_EQ(node_->nvml().init_count(), 1);
  auto t0 = std::chrono::steady_clock::now();
  EXPECT_TRUE(monitor_->stop());  // joined, not detached
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s);
  EXPECT_FALSE(monitor_->running());
  EXPECT_EQ(node_->nvml().init_count(), 0);
}

// Issue 13 item 5: a monitor stopped while its thread is parked in nvmlEventSetWait must not lose
// track of that thread (it used to be detached, and its owner then believed no thread was in NVML).
TEST_F(MonitorTest, StopWhileInsideNvmlKeepsTheThreadUntilItIsOut) {
  Inventory inv = start_node(fleet_path("pcie-t4x2.yaml"));
  auto options = fast_options();
  options.idle_wait_ms = 400;  // parked in NVML for longer than the grace below
  options.stop_grace = 10ms;
  start_monitor(inv, options);
  ASSERT_TRUE(ctl_->wait_waiting(5s));  // the event thread is parked in nvmlEventSetWait
  EXPECT_FALSE(monitor_->stop());
  EXPECT_FALSE(monitor_->finished()) << "the thread is still inside NVML and still ours";
  ASSERT_TRUE(eventually([&] { return monitor_->finished(); }));
  EXPECT_TRUE(monitor_->stop());  // joins it now
  EXPECT_EQ(node_->nvml().init_count(), 0);
}

// A monitor restarted over an inventory with marks keeps "until reset" marks unprobed and probes
// the others (a GPU lost found by re-discovery recovers through the monitor too).
TEST_F(MonitorTest, RestartedMonitorProbesLostMarksButNotUntilResetOnes) {
  Inventory inv = start_node(fleet_path("pcie-t4x2.yaml"));
  inv.gpus[0].health = {false, "XID 79 (GPU has fallen off the bus)"};
  inv.gpus[1].health = {false, kNotRediscovered};
  monitor_ = std::make_unique<HealthMonitor>(node_->shared(), fast_options(), collector_.callback());
  ASSERT_TRUE(monitor_->start(inv, {inv.gpus[0].uuid}).ok());
  ASSERT_TRUE(collector_.wait_for_kind(HealthEvent::Kind::Recovered, inv.gpus[1].uuid));
  ASSERT_TRUE(ctl_->wait_registered(inv.gpus[1].uuid, 5s));
  EXPECT_EQ(monitor_->stats().unhealthy_tracked, 1u);
  EXPECT_EQ(collector_.count(HealthEvent::Kind::Recovered, inv.gpus[0].uuid), 0u);
}

}  // namespace
}  // namespace kgpu
