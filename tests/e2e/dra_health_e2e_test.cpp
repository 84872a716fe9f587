// End to end: DRA resource health (KEP-4680). `kgpu plugin --dra` serves v1alpha1.DRAResourceHealth
// on its DRA socket; the kubelet simulator registers it as kubelet 1.34 and holds the health stream
// open as a kubelet with ResourceHealthStatus does. An XID injected through the fake NVML on a
// prepared claim's GPU must reach the stream (pool, device, a message an operator can act on) in
// under 100 ms, and so must its recovery; a stream opened later starts with the current state.
#include <gtest/gtest.h>
#include <signal.h>

#include <chrono>
#include <filesystem>
#include <iostream>

#include "e2e/dra_fixture.h"
#include "e2e/harness.h"
#include "fake-nvml/fake_nvml_control.h"
#include "sim/dra_health_watch.h"
#include "sim/dra_kubelet_sim.h"
#include "support/eventually.h"
#include "support/fake_api_server.h"

namespace kgpu::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
const std::string& kDriver = kDraGpuDriver;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// What the kubelet would show for `device` in `report`: "" when the report does not name it.
std::string stream_health(const sim::DraHealthReport& report, const std::string& device) {
  const auto* d = report.find(device);
  return d ? d->health : "";
}

long long elapsed_ms(std::chrono::steady_clock::duration d) {
  return std::chrono::duration_cast<std::chrono::microseconds>(d).count() / 1000;
}

class DraHealthE2E : public DraSimE2E {
 protected:
  // XID 79 made recoverable (the default waits for a GPU reset) so the recovery shows on the stream
  // too; a short quiet period and probe interval keep the test quick.
  PluginOptions health_options(const FakeApiServer& api) {
    auto options = dra_options(api, "0,1,2");
    options.env["KGPU_FAKE_NVML_CONTROL"] = control.path();
    options.config_file = work.write("health.yaml", R"(version: v1
kgpu:
  health:
    xidActions: {79: mark-unhealthy}
    recovery:
      probeIntervalMs: 20
      quietPeriodMs: 1000
)");
    return options;
  }
  fake_nvml::Control control{work.file("nvml.control")};
};

TEST_F(DraHealthE2E, Xid79OnAPreparedClaimsGpuReachesTheHealthStreamWithin100msAndSoDoesRecovery) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  auto plugin = start(health_options(api));
  sim::DraKubeletSim kubelet(work.path(), 34);
  auto registered = kubelet.wait_for_plugin(20s);
  ASSERT_TRUE(registered) << registered.error().message << "\n" << diagnostics(*plugin);
  EXPECT_EQ(registered->service, "v1.DRAPlugin") << "the health service is never picked as the DRA service";
  ASSERT_TRUE(registered->health) << "GetInfo does not advertise v1alpha1.DRAResourceHealth";
  ASSERT_TRUE(eventually([&] { return published(api).size() == 3; }, 20s)) << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return contains(plugin->stderr_text(), "health: watching"); }, 20s))
      << diagnostics(*plugin);

  const auto uuids = published_uuids(api);
  const auto& [device, uuid] = *uuids.begin();
  api.put_resource_claim(claim("uid-h", device));
  auto prepared = kubelet.prepare(kDriver, {{"team-a", "train", "uid-h"}});
  ASSERT_TRUE(prepared && prepared->at("uid-h").error.empty()) << diagnostics(*plugin);

  sim::DraHealthWatch watch(registered->endpoint);
  auto all_healthy = [&](const sim::DraHealthReport& r) {
    if (r.devices.size() != 3) return false;
    for (const auto& d : r.devices)
      if (d.health != "Healthy" || d.pool != "node-1") return false;
    return true;
  };
  ASSERT_TRUE(watch.wait_for(all_healthy, 20s)) << watch.end_status() << "\n" << diagnostics(*plugin);

  const auto injected = std::chrono::steady_clock::now();
  ASSERT_TRUE(control.inject_xid(uuid, 79));
  auto unhealthy = watch.wait_for([&](const sim::DraHealthReport& r) { return stream_health(r, device) == "Unhealthy"; }, 5s);
  ASSERT_TRUE(unhealthy) << watch.end_status() << "\n" << diagnostics(*plugin);
  const auto took = unhealthy->received - injected;
  std::cout << "[ figure ] XID 79 -> DRA health stream: "
            << std::chrono::duration_cast<std::chrono::microseconds>(took).count() << " us" << std::endl;
  RecordProperty("xid_to_health_stream_ms", std::to_string(elapsed_ms(took)));
  EXPECT_LT(took, 100ms);
  const auto* d = unhealthy->find(device);
  EXPECT_EQ(d->pool, "node-1");
  EXPECT_TRUE(contains(d->message, "XID 79 (GPU has fallen off the bus)")) << d->message;
  EXPECT_TRUE(contains(d->message, uuid)) << d->message;
  EXPECT_TRUE(contains(d->message, "What to do")) << d->message;
  EXPECT_TRUE(contains(d->message, "does not evict")) << d->message;
  EXPECT_LE(d->message.size(), 1024u);
  EXPECT_GT(d->last_updated_time, 0);
  for (const auto& other : unhealthy->devices) {
    if (other.device != device) {
      EXPECT_EQ(other.health, "Healthy") << other.device;
    }
  }

  // A stream opened now (a restarted kubelet) gets the current state first.
  sim::DraHealthWatch late(registered->endpoint);
  auto first = late.wait_for([](const sim::DraHealthReport&) { return true; }, 5s);
  ASSERT_TRUE(first) << late.end_status();
  EXPECT_EQ(stream_health(*first, device), "Unhealthy");

  // Recovery: after the quiet period kgpu marks the GPU healthy; the stream hears it with the slices.
  auto healthy_again = watch.wait_for(
      [&](const sim::DraHealthReport& r) { return r.received > unhealthy->received && stream_health(r, device) == "Healthy"; },
      20s);
  ASSERT_TRUE(healthy_again) << diagnostics(*plugin);
  EXPECT_TRUE(healthy_again->find(device)->message.empty()) << healthy_again->find(device)->message;
  // The recovery reached the stream as soon as kgpu decided it (its log line), not at a heartbeat.
  EXPECT_LT(healthy_again->received - unhealthy->received, 9s);

  auto unprepared = kubelet.unprepare(kDriver, {{"team-a", "train", "uid-h"}});
  ASSERT_TRUE(unprepared && unprepared->at("uid-h").empty()) << diagnostics(*plugin);
}

// A kubelet without the health service (1.32, 1.33: v1beta1 only) registers kgpu as before: the
// extra name in supported_versions is passed over.
TEST_F(DraHealthE2E, KubeletsThatDoNotKnowTheHealthServiceRegisterAsBefore) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  auto plugin = start(health_options(api));
  sim::DraKubeletSim kubelet(work.path(), 32);
  auto registered = kubelet.wait_for_plugin(20s);
  ASSERT_TRUE(registered) << registered.error().message << "\n" << diagnostics(*plugin);
  EXPECT_EQ(registered->service, "v1beta1.DRAPlugin");
  ASSERT_TRUE(eventually([&] { return published(api).size() == 3; }, 20s)) << diagnostics(*plugin);
  const std::string device = *published(api).begin();
  api.put_resource_claim(claim("uid-old", device));
  auto prepared = kubelet.prepare(kDriver, {{"team-a", "train", "uid-old"}});
  ASSERT_TRUE(prepared && prepared->at("uid-old").error.empty()) << diagnostics(*plugin);
}

// `kgpu kubelet-sim --dra` (the demo's kubelet) prints the health stream: each device as it
// starts, then the XID as it happens.
TEST_F(DraHealthE2E, KubeletSimCommandShowsTheHealthStream) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  auto plugin = start(health_options(api));
  ASSERT_TRUE(eventually([&] { return published(api).size() == 3; }, 20s)) << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return contains(plugin->stderr_text(), "health: watching"); }, 20s))
      << diagnostics(*plugin);
  const auto uuids = published_uuids(api);
  const auto& [device, uuid] = *uuids.begin();
  ProcessOptions p;
  p.argv = {kgpu_binary(), "kubelet-sim", "--dir", work.path() + "/dp-cli", "--dra", "--timeout", "20"};
  fs::create_directories(work.path() + "/dp-cli");
  ChildProcess cli(p, work.path(), "kubelet-sim-health");
  const std::string healthy = "[kubelet-sim] DRA health: node-1/" + device + " Healthy";
  ASSERT_TRUE(eventually([&] { return contains(cli.stdout_text(), healthy); }, 20s))
      << cli.stdout_text() << cli.stderr_text() << diagnostics(*plugin);
  ASSERT_TRUE(control.inject_xid(uuid, 79));
  const std::string unhealthy = "[kubelet-sim] DRA health: node-1/" + device + " Unhealthy: XID 79 (GPU has fallen off the bus)";
  EXPECT_TRUE(eventually([&] { return contains(cli.stdout_text(), unhealthy); }, 20s))
      << cli.stdout_text() << diagnostics(*plugin);
  cli.signal(SIGTERM);
  EXPECT_EQ(cli.wait_exit(20s), 0) << cli.stdout_text() << cli.stderr_text();
}

}  // namespace
}  // namespace kgpu::test
