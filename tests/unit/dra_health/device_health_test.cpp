// The health report of published DRA devices (KEP-4680 stream contents): which devices are
// Unhealthy, and that each message names the event, its meaning and what to do.
#include "dra/health/device_health.h"

#include <gtest/gtest.h>

namespace kgpu::dra::health {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

Inventory node() {
  Inventory inv;
  Gpu a;
  a.uuid = "GPU-a";
  a.vendor = Vendor::Nvidia;
  Gpu b = a;
  b.uuid = "GPU-b";
  b.mig_enabled = true;
  MigDevice m;
  m.uuid = "MIG-b1";
  b.mig_devices = {m};
  inv.gpus = {a, b};
  return inv;
}

DraDevice device(const std::string& name, const std::string& uuid, std::vector<DeviceTaint> taints = {}) {
  DraDevice d{name, nullptr, {{"uuid", uuid}}, {}};
  d.taints = std::move(taints);
  return d;
}

DriverPool pool(std::vector<DraDevice> devices) { return {"gpu.nvidia.com", "node-1", std::move(devices)}; }

TEST(DeviceHealth, HealthyDevicesCarryNoMessage) {
  auto out = pool_health(pool({device("gpu-0", "GPU-a"), device("gpu-1-mig-1", "MIG-b1")}), node(), {});
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0], (DeviceHealthReport{"node-1", "gpu-0", DeviceHealthStatus::Healthy, ""}));
  EXPECT_EQ(out[1], (DeviceHealthReport{"node-1", "gpu-1-mig-1", DeviceHealthStatus::Healthy, ""}));
}

TEST(DeviceHealth, AFatalXidSaysWhatHappenedThatItWaitsForAResetAndWhatToDo) {
  auto inv = node();
  inv.gpus[0].health = HealthState(false, "XID 79 (GPU has fallen off the bus)", 79);
  auto out = pool_health(pool({device("gpu-0", "GPU-a", {{"gpu.nvidia.com/xid", "79", kTaintNoSchedule}})}), inv, {});
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].health, DeviceHealthStatus::Unhealthy);
  const auto& m = out[0].message;
  EXPECT_TRUE(contains(m, "XID 79 (GPU has fallen off the bus) on GPU-a")) << m;
  EXPECT_TRUE(contains(m, "until the GPU is reset")) << m;
  EXPECT_TRUE(contains(m, "What to do: move the work")) << m;
  EXPECT_TRUE(contains(m, "kgpu does not evict")) << m;
}

TEST(DeviceHealth, ARecoverableXidSaysWhenItComesBack) {
  auto inv = node();
  inv.gpus[0].health = HealthState(false, "XID 74 (NVLink error)", 74);
  HealthConfig policy;
  policy.recovery_quiet_period_ms = 30000;
  auto out = pool_health(pool({device("gpu-0", "GPU-a", {{"gpu.nvidia.com/xid", "74", kTaintNoSchedule}})}), inv, policy);
  EXPECT_EQ(out[0].health, DeviceHealthStatus::Unhealthy);
  EXPECT_TRUE(contains(out[0].message, "healthy again once the GPU answers without errors for 30 s")) << out[0].message;
  policy.xid_actions[74] = XidAction::MarkUnhealthyUntilReset;  // the operator's policy decides the words
  out = pool_health(pool({device("gpu-0", "GPU-a", {{"gpu.nvidia.com/xid", "74", kTaintNoSchedule}})}), inv, policy);
  EXPECT_TRUE(contains(out[0].message, "until the GPU is reset")) << out[0].message;
}

TEST(DeviceHealth, ALostGpuAndItsMigDevicesAreUnhealthyWithTheCause) {
  auto inv = node();
  inv.gpus[1].health = HealthState(false, "GPU is lost (NVML_ERROR_GPU_IS_LOST)");
  auto out = pool_health(pool({device("gpu-1-mig-1", "MIG-b1", {{"gpu.nvidia.com/gpu-lost", "", kTaintNoSchedule}})}),
                         inv, {});
  EXPECT_EQ(out[0].health, DeviceHealthStatus::Unhealthy);
  EXPECT_TRUE(contains(out[0].message, "MIG-b1: GPU is lost (NVML_ERROR_GPU_IS_LOST)")) << out[0].message;
  EXPECT_TRUE(contains(out[0].message, "once the GPU answers")) << out[0].message;
}

TEST(DeviceHealth, AnIgnoredXidLeavesTheDeviceHealthyWithANote) {
  auto out = pool_health(pool({device("gpu-0", "GPU-a", {{"gpu.nvidia.com/xid", "13", kTaintNone}})}), node(), {});
  EXPECT_EQ(out[0].health, DeviceHealthStatus::Healthy);
  EXPECT_TRUE(contains(out[0].message, "XID 13 (graphics engine exception (application error))")) << out[0].message;
}

TEST(DeviceHealth, AShareDaemonThatIsNotReadyMakesTheSharedGpuUnhealthy) {
  auto out = pool_health(pool({device("gpu-0", "GPU-a", {{"gpu.nvidia.com/mps-daemon", "not-ready", kTaintNoSchedule}})}),
                         node(), {});
  EXPECT_EQ(out[0].health, DeviceHealthStatus::Unhealthy);
  EXPECT_TRUE(contains(out[0].message, "MPS control daemon")) << out[0].message;
}

TEST(DeviceHealth, MessagesAreCutAsTheKubeletCutsThem) {
  EXPECT_EQ(fit_message("short"), "short");
  auto cut = fit_message(std::string(2000, 'x'));
  EXPECT_EQ(cut.size(), kMaxMessage);
  EXPECT_EQ(cut.substr(cut.size() - 3), "...");
}

}  // namespace
}  // namespace kgpu::dra::health
