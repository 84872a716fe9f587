#include "health/health_events.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kgpu {
namespace {

using ::testing::HasSubstr;

MigDevice mig(const std::string& uuid, int index, int gi, int ci) {
  MigDevice m;
  m.uuid = uuid;
  m.index = index;
  m.gpu_instance_id = gi;
  m.compute_instance_id = ci;
  m.profile = "1g.5gb";
  return m;
}

Inventory two_gpus_one_with_mig() {
  Inventory inv;
  Gpu a;
  a.index = 0;
  a.uuid = "GPU-a";
  Gpu b;
  b.index = 1;
  b.uuid = "GPU-b";
  b.mig_enabled = true;
  b.mig_devices = {mig("MIG-b1", 0, 1, 0), mig("MIG-b2", 1, 2, 0), mig("MIG-b3", 2, 2, 1)};
  inv.gpus = {a, b};
  return inv;
}

HealthEvent xid(const std::string& gpu, uint64_t x, std::optional<int> gi = {}, std::optional<int> ci = {}) {
  return {gpu, HealthEvent::Kind::Xid, x, gi, ci, {}};
}

TEST(ApplyHealthEvent, FatalXidMarksOnlyThatGpu) {
  auto up = apply_health_event(two_gpus_one_with_mig(), xid("GPU-a", 79), HealthConfig{});
  ASSERT_EQ(up.changes.size(), 1u);
  EXPECT_EQ(up.changes[0].device, "GPU-a");
  EXPECT_FALSE(up.changes[0].healthy);
  EXPECT_EQ(up.changes[0].cause, "XID 79 (GPU has fallen off the bus)");
  // 79 is an until-reset XID: the log line says what brings the GPU back (issue 30, item 6).
  EXPECT_TRUE(up.changes[0].until_reset);
  EXPECT_EQ(up.changes[0].describe(),
            "GPU-a: unhealthy: XID 79 (GPU has fallen off the bus) (until GPU reset; restart kgpu after the reset)");
  EXPECT_FALSE(up.inventory.gpus[0].health.healthy);
  EXPECT_EQ(up.inventory.gpus[0].health.reason, "XID 79 (GPU has fallen off the bus)");
  EXPECT_TRUE(up.inventory.gpus[1].health.healthy);
}

TEST(ApplyHealthEvent, RecoverableXidSaysNothingOfAReset) {
  auto up = apply_health_event(two_gpus_one_with_mig(), xid("GPU-a", 8), HealthConfig{});
  ASSERT_EQ(up.changes.size(), 1u);
  EXPECT_FALSE(up.changes[0].until_reset);
  EXPECT_EQ(up.changes[0].describe(), "GPU-a: unhealthy: XID 8 (GPU stopped processing (command timeout))");
}

// An XID the policy ignores (an application's own error) changes no health; it is only noted for
// DRA's informational taint (issue 29, item 8), on the devices it names.
TEST(ApplyHealthEvent, IgnoredXidChangesNoHealthAndIsNotedAsInformational) {
  auto before = two_gpus_one_with_mig();
  auto up = apply_health_event(before, xid("GPU-a", 13), HealthConfig{});
  EXPECT_TRUE(up.changes.empty());
  EXPECT_TRUE(up.informational_changed);
  EXPECT_TRUE(up.inventory.gpus[0].health.healthy);
  EXPECT_EQ(up.inventory.gpus[0].health.informational_xid, 13u);
  EXPECT_EQ(up.inventory.gpus[1], before.gpus[1]);
  // The same XID again changes nothing; on a MIG instance only that MIG device notes it.
  EXPECT_FALSE(apply_health_event(up.inventory, xid("GPU-a", 13), HealthConfig{}).changed());
  auto mig = apply_health_event(before, xid("GPU-b", 43, 2, 0), HealthConfig{});
  EXPECT_EQ(mig.inventory.gpus[1].mig_devices[1].health.informational_xid, 43u);
  EXPECT_EQ(mig.inventory.gpus[1].mig_devices[0].health.informational_xid, 0u);
  EXPECT_EQ(mig.inventory.gpus[1].health.informational_xid, 0u);
  // A fatal XID keeps its number for the taint; recovery forgets both.
  auto fatal = apply_health_event(up.inventory, xid("GPU-a", 79), HealthConfig{});
  EXPECT_EQ(fatal.inventory.gpus[0].health.xid, 79u);
  auto back = apply_health_event(fatal.inventory, {"GPU-a", HealthEvent::Kind::Recovered, 0, {}, {}, {}}, HealthConfig{});
  EXPECT_EQ(back.inventory.gpus[0].health, HealthState{});
  // Checks off: nothing at all.
  HealthConfig off;
  off.xids_enabled = false;
  EXPECT_FALSE(apply_health_event(before, xid("GPU-a", 13), off).changed());
  EXPECT_EQ(apply_health_event(before, xid("GPU-a", 13), off).inventory, before);
}

TEST(ApplyHealthEvent, DoubleBitEccKeepsXid48ForTheTaint) {
  auto up = apply_health_event(two_gpus_one_with_mig(), {"GPU-a", HealthEvent::Kind::EccDoubleBit, 0, {}, {}, {}},
                               HealthConfig{});
  EXPECT_EQ(up.inventory.gpus[0].health.xid, 48u);
  auto lost = apply_health_event(two_gpus_one_with_mig(), {"GPU-a", HealthEvent::Kind::Lost, 0, {}, {}, {}},
                                 HealthConfig{});
  EXPECT_FALSE(lost.inventory.gpus[0].health.healthy);
  EXPECT_EQ(lost.inventory.gpus[0].health.xid, 0u);
}

TEST(ApplyHealthEvent, UnknownGpuChangesNothing) {
  auto up = apply_health_event(two_gpus_one_with_mig(), xid("GPU-zz", 79), HealthConfig{});
  EXPECT_FALSE(up.changed());
}

TEST(ApplyHealthEvent, MigInstanceEventMarksOnlyTheMatchingMigDevice) {
  auto up = apply_health_event(two_gpus_one_with_mig(), xid("GPU-b", 48, 2, 1), HealthConfig{});
  ASSERT_EQ(up.changes.size(), 1u);
  EXPECT_EQ(up.changes[0].device, "MIG-b3");
  const Gpu& b = up.inventory.gpus[1];
  EXPECT_TRUE(b.health.healthy);
  EXPECT_TRUE(b.mig_devices[0].health.healthy);
  EXPECT_TRUE(b.mig_devices[1].health.healthy);
  EXPECT_FALSE(b.mig_devices[2].health.healthy);
}

TEST(ApplyHealthEvent, GpuWideEventMarksTheGpuAndEveryMigDevice) {
  auto up = apply_health_event(two_gpus_one_with_mig(), {"GPU-b", HealthEvent::Kind::EccDoubleBit, 0, {}, {}, {}},
                               HealthConfig{});
  EXPECT_EQ(up.changes.size(), 4u);
  const Gpu& b = up.inventory.gpus[1];
  EXPECT_FALSE(b.health.healthy);
  for (const auto& m : b.mig_devices) {
    EXPECT_FALSE(m.health.healthy);
    EXPECT_EQ(m.health.reason, "double-bit ECC error");
  }
}

TEST(ApplyHealthEvent, RecoveredRestoresTheSameScope) {
  HealthConfig c;
  auto down = apply_health_event(two_gpus_one_with_mig(), xid("GPU-b", 74, 2, 1), c);
  auto down2 = apply_health_event(down.inventory, xid("GPU-a", 74), c);
  auto up = apply_health_event(down2.inventory, {"GPU-b", HealthEvent::Kind::Recovered, 0, 2, 1, {}}, c);
  ASSERT_EQ(up.changes.size(), 1u);
  EXPECT_EQ(up.changes[0].device, "MIG-b3");
  EXPECT_TRUE(up.changes[0].healthy);
  EXPECT_TRUE(up.inventory.gpus[1].mig_devices[2].health.healthy);
  EXPECT_FALSE(up.inventory.gpus[0].health.healthy);  // the other GPU is untouched
}

TEST(ApplyHealthEvent, SecondFailureKeepsTheFirstCause) {
  HealthConfig c;
  auto one = apply_health_event(two_gpus_one_with_mig(), xid("GPU-a", 74), c);
  auto two = apply_health_event(one.inventory, xid("GPU-a", 79), c);
  EXPECT_FALSE(two.changed());
  EXPECT_THAT(two.inventory.gpus[0].health.reason, HasSubstr("XID 74"));
}

TEST(ApplyHealthEvent, LostIsUnhealthyWhateverTheXidPolicyUnlessChecksAreOff) {
  HealthConfig c;
  c.xids_enabled = false;
  HealthEvent lost{"GPU-a", HealthEvent::Kind::Lost, 0, {}, {}, "nvmlDeviceGetPciInfo: GPU is lost"};
  auto up = apply_health_event(two_gpus_one_with_mig(), lost, c);
  ASSERT_EQ(up.changes.size(), 1u);
  EXPECT_EQ(up.changes[0].cause, "GPU is lost (nvmlDeviceGetPciInfo: GPU is lost)");
  c.enabled = false;
  EXPECT_FALSE(apply_health_event(two_gpus_one_with_mig(), lost, c).changed());
}

TEST(ApplyHealthEvent, UnknownInstanceFallsBackToTheWholeGpu) {
  auto up = apply_health_event(two_gpus_one_with_mig(), xid("GPU-a", 74, 3, 0), HealthConfig{});
  ASSERT_EQ(up.changes.size(), 1u);
  EXPECT_EQ(up.changes[0].device, "GPU-a");
}

TEST(CarryOverHealth, RediscoveryKeepsFailuresButNotOtherVendorsOrGoneDevices) {
  Inventory before = two_gpus_one_with_mig();
  before.gpus[0].health = {false, "XID 48 (double-bit ECC error)"};
  before.gpus[1].mig_devices[1].health = {false, "XID 94 (contained ECC error)"};
  Gpu amd;
  amd.vendor = Vendor::Amd;
  amd.uuid = "0000:c1:00.0";
  amd.health = {false, "sysfs node disappeared"};
  before.gpus.push_back(amd);

  Inventory fresh = two_gpus_one_with_mig();  // NVML answers: everything healthy
  fresh.gpus.push_back(amd);
  fresh.gpus.back().health = {};  // the AMD device is back in sysfs
  auto after = carry_over_health(before, fresh);
  EXPECT_FALSE(after.gpus[0].health.healthy);
  EXPECT_EQ(after.gpus[0].health.reason, "XID 48 (double-bit ECC error)");
  EXPECT_TRUE(after.gpus[1].health.healthy);
  EXPECT_FALSE(after.gpus[1].mig_devices[1].health.healthy);
  EXPECT_TRUE(after.gpus[1].mig_devices[0].health.healthy);
  EXPECT_TRUE(after.gpus[2].health.healthy) << "sysfs devices take the health discovery sees";

  // A failure the new discovery sees itself is kept as it is.
  Inventory lost = two_gpus_one_with_mig();
  lost.gpus[1].health = {false, "GPU is lost"};
  EXPECT_EQ(carry_over_health(two_gpus_one_with_mig(), lost).gpus[1].health.reason, "GPU is lost");
}

TEST(CarryOverHealth, RediscoveryKeepsTheXidOfAMarkAndAHealthyDevicesInformationalXid) {
  Inventory before = two_gpus_one_with_mig();
  before.gpus[0].health = {false, "XID 79 (GPU has fallen off the bus)", 79};
  before.gpus[1].health.informational_xid = 13;
  before.gpus[1].mig_devices[2].health.informational_xid = 43;
  auto after = carry_over_health(before, two_gpus_one_with_mig());
  EXPECT_EQ(after.gpus[0].health, before.gpus[0].health);
  EXPECT_EQ(after.gpus[1].health.informational_xid, 13u);
  EXPECT_EQ(after.gpus[1].mig_devices[2].health.informational_xid, 43u);
  EXPECT_EQ(after.gpus[1].mig_devices[0].health.informational_xid, 0u);
}

TEST(CarryOverHealth, VanishedGpuStaysUnhealthyUntilItAnswersAgain) {
  Inventory before = two_gpus_one_with_mig();
  before.topology.links.assign(2, std::vector<GpuLink>(2, GpuLink{12, PcieLevel::SameBoard}));
  Inventory fresh = two_gpus_one_with_mig();
  fresh.gpus.erase(fresh.gpus.begin() + 1);  // GPU-b lost: no handle, not discovered
  fresh.topology.links.assign(1, std::vector<GpuLink>(1));
  auto after = carry_over_health(before, fresh);
  ASSERT_EQ(after.gpus.size(), 2u);
  EXPECT_EQ(after.gpus[1].uuid, "GPU-b");
  EXPECT_FALSE(after.gpus[1].health.healthy);
  EXPECT_EQ(after.gpus[1].health.reason, kNotRediscovered);
  for (const auto& m : after.gpus[1].mig_devices) EXPECT_FALSE(m.health.healthy) << m.uuid;
  ASSERT_EQ(after.topology.links.size(), 2u);
  EXPECT_EQ(after.topology.links[0].size(), 2u);
  EXPECT_EQ(after.topology.links[1][0].pcie, PcieLevel::Unknown);

  // Found again and answering: healthy (this mark, unlike an XID's, was only about absence).
  auto back = carry_over_health(after, two_gpus_one_with_mig());
  EXPECT_TRUE(back.gpus[1].health.healthy);
  EXPECT_TRUE(back.gpus[1].mig_devices[0].health.healthy);
}

// Issue 19: a GPU the monitor found lost (here while registering its events) and that answers a
// later re-discovery comes back like one re-discovery itself found missing: the path that noticed
// the loss must not decide whether it can recover.
TEST(CarryOverHealth, LossTheMonitorSawIsLiftedByARediscoveryThatFindsTheGpuAnswering) {
  Inventory before = two_gpus_one_with_mig();
  HealthEvent lost{"GPU-b", HealthEvent::Kind::Lost, 0, std::nullopt, std::nullopt, "lost while registering events"};
  before = apply_health_event(before, lost, HealthConfig{}).inventory;
  ASSERT_FALSE(before.gpus[1].health.healthy);
  EXPECT_TRUE(is_lost_mark(before.gpus[1].health));
  EXPECT_EQ(lost_gpus(before), std::vector<std::string>{"GPU-b"});

  auto after = carry_over_health(before, two_gpus_one_with_mig());
  EXPECT_TRUE(after.gpus[1].health.healthy) << after.gpus[1].health.reason;
  for (const auto& m : after.gpus[1].mig_devices) EXPECT_TRUE(m.health.healthy) << m.uuid;
  EXPECT_TRUE(lost_gpus(after).empty());
}

TEST(CarryOverHealth, OnlyMarksOfAGpuThatDidNotAnswerAreLostMarks) {
  EXPECT_TRUE(is_lost_mark({false, kNotRediscovered}));
  EXPECT_TRUE(is_lost_mark({false, event_cause({"GPU-a", HealthEvent::Kind::Lost, 0, {}, {}, "x"})}));
  EXPECT_FALSE(is_lost_mark({false, event_cause(xid("GPU-a", 79))}));
  EXPECT_FALSE(is_lost_mark({true, ""}));
  Inventory inv = two_gpus_one_with_mig();
  inv.gpus[0].health = {false, event_cause(xid("GPU-a", 79))};
  EXPECT_TRUE(lost_gpus(inv).empty());
}

}  // namespace
}  // namespace kgpu
