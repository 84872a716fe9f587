// End to end: device health. The fake NVML's control channel injects XIDs and lost GPUs into the
// real `kgpu plugin`; the kubelet simulator shows what the kubelet would see.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>

#include "e2e/sim_fixture.h"
#include "fake-nvml/fake_nvml_control.h"

namespace kgpu::test {
namespace {

const std::string kGpu = "nvidia.com/gpu";

class HealthE2E : public SimE2E {
 protected:
  PluginOptions with_control(PluginOptions options = {}) {
    options.env["KGPU_FAKE_NVML_CONTROL"] = control.path();
    return options;
  }
  // Waits until the daemon's health monitor has its events registered (logged after start()).
  bool wait_watching(const ChildProcess& plugin) {
    return wait_until([&] { return plugin.stderr_text().find("health: watching") != std::string::npos; }, 20s);
  }

  fake_nvml::Control control{work.file("nvml.control")};
};

TEST_F(HealthE2E, FatalXidMarksExactlyThatGpuAndAnIgnoredXidNothing) {
  auto plugin = start(with_control());
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_watching(*plugin)) << diagnostics(*plugin);
  auto ids = sim->snapshot().find(kGpu)->device_ids();
  // The ignored XID goes first: events are handled in order, so once 79 shows, 13 was handled.
  ASSERT_TRUE(control.inject_xid(ids[1], 13));
  ASSERT_TRUE(control.inject_xid(ids[3], 79));
  ASSERT_TRUE(wait_health(kGpu, ids[3], "Unhealthy")) << diagnostics(*plugin);
  auto snap = sim->snapshot();
  EXPECT_EQ(snap.find(kGpu)->healthy_count(), 7u);
  EXPECT_EQ(health_of(kGpu, ids[1]), "Healthy");
  // The unhealthy GPU's neighbours still allocate.
  EXPECT_TRUE(sim->allocate(kGpu, {ids[0], ids[2]}).ok());
  std::string log = plugin->stderr_text();
  EXPECT_NE(log.find(ids[3] + ": unhealthy: XID 79"), std::string::npos) << log;

  // `kgpu devices --live` shows what the running plugin advertises.
  ProcessOptions devices;
  devices.argv = {kgpu_binary(), "devices", "--live", "--kubelet-socket", plugin_dir + "/kubelet.sock"};
  devices.env = fake_nvml_env(make_fake_node("dgx-a100.yaml", work.file("devices-node")));
  ChildProcess cli(devices, work.path(), "devices");
  ASSERT_EQ(cli.wait_exit(20s), 0) << cli.stderr_text();
  std::string out = cli.stdout_text();
  EXPECT_NE(out.find(ids[3] + "  Unhealthy"), std::string::npos) << out;
  EXPECT_NE(out.find(ids[1] + "  Healthy"), std::string::npos) << out;
  // Without --metrics-addr the cause is not readable here: said so, with where to look (issue 41).
  EXPECT_NE(out.find("UNHEALTHY: not known here (no --metrics-addr: see the hint below)"), std::string::npos) << out;
}

TEST_F(HealthE2E, XidOnAGpuMarksEveryReplicaOfIt) {
  std::string config = work.write("ts.yaml", R"(version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 3
)");
  auto options = with_control();
  options.config_file = config;
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 24)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_watching(*plugin)) << diagnostics(*plugin);
  auto replicas = sim->snapshot().find(kGpu)->device_ids();
  std::string gpu = replicas[0].substr(0, replicas[0].find("::"));
  ASSERT_TRUE(control.inject_xid(gpu, 48));
  ASSERT_TRUE(wait_healthy(kGpu, 21)) << diagnostics(*plugin);
  for (const auto& id : replicas)
    EXPECT_EQ(health_of(kGpu, id), id.rfind(gpu + "::", 0) == 0 ? "Unhealthy" : "Healthy") << id;
}

TEST_F(HealthE2E, XidNamingOneMigInstanceAffectsOnlyThatMigDevice) {
  PluginOptions options = with_control();
  options.fleet_file = "a100-mig-mixed.yaml";
  options.extra_args = {"--mig-strategy=mixed"};
  auto plugin = start(options);
  const std::string mig = "nvidia.com/mig-1g.5gb";
  // The fleet's mixed layout: 1g.5gb x 9, 2g.10gb x 4, 3g.20gb x 1, one whole GPU.
  ASSERT_TRUE(wait_healthy(mig, 9) && wait_healthy("nvidia.com/mig-2g.10gb", 4) &&
              wait_healthy("nvidia.com/mig-3g.20gb", 1) && wait_healthy(kGpu, 1))
      << diagnostics(*plugin);
  ASSERT_TRUE(wait_watching(*plugin)) << diagnostics(*plugin);
  auto before = sim->snapshot();
  const size_t total_healthy = 15;
  std::string victim = before.find(mig)->device_ids().back();
  ASSERT_EQ(victim.rfind("MIG-", 0), 0u) << victim;
  ASSERT_TRUE(control.inject_xid(victim, 94));  // the fake delivers it on the parent with GI/CI ids
  ASSERT_TRUE(wait_health(mig, victim, "Unhealthy")) << diagnostics(*plugin);
  auto after = sim->snapshot();
  size_t healthy = 0;
  for (const auto& [name, r] : after.resources) healthy += r.healthy_count();
  EXPECT_EQ(healthy, total_healthy - 1) << diagnostics(*plugin);
}

TEST_F(HealthE2E, RecoverableXidComesBackAfterTheQuietPeriod) {
  std::string config = work.write("recover.yaml", R"(version: v1
kgpu:
  health:
    recovery:
      probeIntervalMs: 20
      quietPeriodMs: 200
)");
  auto options = with_control();
  options.config_file = config;
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_watching(*plugin)) << diagnostics(*plugin);
  auto ids = sim->snapshot().find(kGpu)->device_ids();
  ASSERT_TRUE(control.inject_xid(ids[2], 74));  // NVLink error: unhealthy, recoverable
  ASSERT_TRUE(wait_health(kGpu, ids[2], "Unhealthy")) << diagnostics(*plugin);
  ASSERT_TRUE(wait_health(kGpu, ids[2], "Healthy")) << diagnostics(*plugin);
  EXPECT_NE(plugin->stderr_text().find(ids[2] + ": healthy"), std::string::npos) << diagnostics(*plugin);
}

TEST_F(HealthE2E, LostGpuAtStartIsAdvertisedUnhealthyAndOthersStillAllocate) {
  std::vector<std::string> ids;
  {
    auto probe = start(with_control());
    ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*probe);
    ids = sim->snapshot().find(kGpu)->device_ids();
    probe->signal(SIGTERM);
    ASSERT_TRUE(probe->wait_exit(5s).has_value());
  }
  ASSERT_TRUE(control.set_lost(ids[5], true));  // replayed by the next process's first nvmlInit
  auto options = with_control();
  options.name = "plugin-lost";
  auto plugin = start(options);
  // NVML cannot even hand out a handle for a lost GPU (so not its UUID either): the driver's procfs
  // entry names it (issue 37), so it is advertised Unhealthy, as a GPU lost at run time is, and the
  // other seven are served.
  ASSERT_TRUE(wait_healthy(kGpu, 7, 2, 8)) << diagnostics(*plugin);
  EXPECT_EQ(health_of(kGpu, ids[5]), "Unhealthy");
  auto chosen = sim->preferred(kGpu, sim->snapshot().find(kGpu)->healthy_ids(), {}, 4);
  ASSERT_TRUE(chosen.ok()) << chosen.error().message;
  EXPECT_EQ(std::count(chosen->begin(), chosen->end(), ids[5]), 0);
  auto edits = sim->allocate(kGpu, *chosen);
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  EXPECT_NE(plugin->stderr_text().find(": nvmlDeviceGetHandleByIndex: GPU is lost; known from the driver's procfs entry"),
            std::string::npos)
      << diagnostics(*plugin);
}

TEST_F(HealthE2E, GpuLostAtRunTimeStaysAdvertisedUnhealthyAcrossReloads) {
  auto plugin = start(with_control());
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  auto ids = sim->snapshot().find(kGpu)->device_ids();
  ASSERT_TRUE(control.set_lost(ids[2], true));
  ASSERT_TRUE(control.sync(20s));
  plugin->signal(SIGHUP);  // re-discovery: NVML has no handle for the lost GPU
  ASSERT_TRUE(wait_healthy(kGpu, 7, 1, 8)) << diagnostics(*plugin);
  EXPECT_EQ(health_of(kGpu, ids[2]), "Unhealthy");
  EXPECT_TRUE(sim->allocate(kGpu, {ids[0], ids[1]}).ok());

  ASSERT_TRUE(control.set_lost(ids[2], false));
  ASSERT_TRUE(control.sync(20s));
  plugin->signal(SIGHUP);  // it answers again
  ASSERT_TRUE(wait_healthy(kGpu, 8, 1, 8)) << diagnostics(*plugin);
}

TEST_F(HealthE2E, DisableHealthchecksAllTurnsMonitoringOff) {
  auto options = with_control();
  options.env["DP_DISABLE_HEALTHCHECKS"] = "all";
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("health: checks disabled") != std::string::npos; }, 20s))
      << diagnostics(*plugin);
  auto ids = sim->snapshot().find(kGpu)->device_ids();
  ASSERT_TRUE(control.inject_xid(ids[0], 79));
  EXPECT_TRUE(sim->allocate(kGpu, {ids[0]}).ok());
  EXPECT_EQ(sim->snapshot().find(kGpu)->healthy_count(), 8u);
  // No event set was ever registered, so nothing could have reacted to the XID.
  EXPECT_EQ(read_file(control.path() + ".ack").find("registered"), std::string::npos);
}

// Issue 19, the ordering that made GpuLostAtRunTimeStaysAdvertisedUnhealthyAcrossReloads flaky,
// held deterministically: discovery sees GPU 2, which drops off the bus as the health monitor
// starts, so the monitor (not re-discovery) finds it lost. Once it answers, a re-discovery brings it
// back at once (the monitor's quiet period here is far longer than the test), and the restarted
// monitor watches it again.
TEST_F(HealthE2E, GpuLostWhileTheMonitorRegistersComesBackOnceItAnswers) {
  std::vector<std::string> ids;
  {
    auto probe = start();  // no control channel: its registrations must not show in the .ack file
    ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*probe);
    ids = sim->snapshot().find(kGpu)->device_ids();
    probe->signal(SIGTERM);
    ASSERT_TRUE(probe->wait_exit(5s).has_value());
  }
  std::string config = work.write("slow-recovery.yaml", R"(version: v1
kgpu:
  health:
    recovery:
      quietPeriodMs: 600000
)");
  ASSERT_TRUE(control.lose_at_next_event_set(ids[2]));  // replayed by the next process's first nvmlInit
  auto options = with_control();
  options.config_file = config;
  options.name = "plugin-lost-at-registration";
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 7, 2, 8)) << diagnostics(*plugin);
  EXPECT_EQ(health_of(kGpu, ids[2]), "Unhealthy");
  EXPECT_NE(plugin->stderr_text().find("lost while registering events"), std::string::npos) << diagnostics(*plugin);

  ASSERT_TRUE(control.set_lost(ids[2], false));
  ASSERT_TRUE(control.sync(20s));
  plugin->signal(SIGHUP);  // re-discovery finds it answering
  ASSERT_TRUE(wait_healthy(kGpu, 8, 2, 8)) << diagnostics(*plugin);
  ASSERT_TRUE(control.wait_registered(ids[2], 20s)) << diagnostics(*plugin);
  ASSERT_TRUE(control.inject_xid(ids[2], 79));
  ASSERT_TRUE(wait_health(kGpu, ids[2], "Unhealthy")) << diagnostics(*plugin);
}

// The other way round: a loss only re-discovery saw is followed by the monitor's probes too, so the
// GPU comes back when it answers without waiting for another reload.
TEST_F(HealthE2E, GpuLostFoundByRediscoveryRecoversThroughTheMonitor) {
  std::string config = work.write("fast-recovery.yaml", R"(version: v1
kgpu:
  health:
    recovery:
      probeIntervalMs: 20
      probeMaxIntervalMs: 100
      quietPeriodMs: 200
)");
  auto options = with_control();
  options.config_file = config;
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_watching(*plugin)) << diagnostics(*plugin);
  auto ids = sim->snapshot().find(kGpu)->device_ids();
  ASSERT_TRUE(control.set_lost(ids[4], true));
  ASSERT_TRUE(control.sync(20s));
  plugin->signal(SIGHUP);
  ASSERT_TRUE(wait_healthy(kGpu, 7, 1, 8)) << diagnostics(*plugin);
  ASSERT_TRUE(control.set_lost(ids[4], false));
  ASSERT_TRUE(wait_healthy(kGpu, 8, 1, 8)) << diagnostics(*plugin);
}

// Issue 13 item 5: a reload that switches health checks off replaced a monitor whose thread was
// parked in nvmlEventSetWait (10 minutes), detached it and then forgot it: SIGTERM skipped the
// _Exit path and the process hung in its static destructors. Losing every GPU replaces the monitor
// the same way. Either way SIGTERM must end the process at once, with status 0.
TEST_F(HealthE2E, SigtermRightAfterTheMonitorWasReplacedExitsAtOnce) {
  std::string config = work.write("health.yaml", "version: v1\n");
  auto options = with_control();
  options.config_file = config;
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_watching(*plugin)) << diagnostics(*plugin);
  ASSERT_TRUE(control.wait_waiting(20s)) << diagnostics(*plugin);  // parked in its 10-minute wait
  auto ids = sim->snapshot().find(kGpu)->device_ids();
  // Every GPU lost: the monitor is replaced by one that probes them.
  for (const auto& id : ids) ASSERT_TRUE(control.set_lost(id, true));
  ASSERT_TRUE(control.sync(20s));
  plugin->signal(SIGHUP);
  ASSERT_TRUE(wait_healthy(kGpu, 0, 1, 8)) << diagnostics(*plugin);
  for (const auto& id : ids) ASSERT_TRUE(control.set_lost(id, false));
  ASSERT_TRUE(control.sync(20s));
  // Checks switched off: the monitor goes away while its thread is inside NVML.
  work.write("health.yaml", "version: v1\nkgpu:\n  health:\n    enabled: false\n");
  plugin->signal(SIGHUP);
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("health: checks disabled") != std::string::npos; }, 20s))
      << diagnostics(*plugin);
  const auto t0 = std::chrono::steady_clock::now();
  plugin->signal(SIGTERM);
  auto rc = plugin->wait_exit(5s);
  const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - t0);
  ASSERT_TRUE(rc.has_value()) << "still running 5 s after SIGTERM\n" << diagnostics(*plugin);
  EXPECT_EQ(*rc, 0) << diagnostics(*plugin);
  EXPECT_LT(took.count(), 1000) << diagnostics(*plugin);
  RecordProperty("sigterm_to_exit_ms", static_cast<int>(took.count()));
}

}  // namespace
}  // namespace kgpu::test
