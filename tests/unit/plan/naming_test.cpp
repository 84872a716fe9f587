// Resource naming and device ID rules of the planner.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plan/device_ids.h"
#include "plan/plan.h"
#include "plan/resource_names.h"
#include "unit/plan/inventories.h"

namespace kgpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace kgpu::test;

TEST(WildcardMatch, IsAnchored) {
  EXPECT_TRUE(wildcard_match("1g.10gb", "1g.10gb"));
  EXPECT_FALSE(wildcard_match("1g.10gb", "1g.10gb+me"));  // NVIDIA 0.17's substring bug (#1807)
  EXPECT_FALSE(wildcard_match("1g.10gb", "1c.1g.10gb"));
  EXPECT_TRUE(wildcard_match("*", ""));
  EXPECT_TRUE(wildcard_match("*", "anything"));
  EXPECT_TRUE(wildcard_match("1g.*", "1g.10gb+me"));
  EXPECT_TRUE(wildcard_match("*A100*", "NVIDIA A100-SXM4-40GB"));
  EXPECT_FALSE(wildcard_match("*H100*", "NVIDIA A100-SXM4-40GB"));
  EXPECT_TRUE(wildcard_match("a*b*c", "aXbYbZc"));
  EXPECT_FALSE(wildcard_match("a*b*c", "aXbYbZ"));
}

TEST(ResourceNames, MixedMigNamesReplacePlusWithDot) {
  EXPECT_EQ(mixed_mig_resource_name("1g.5gb"), "nvidia.com/mig-1g.5gb");
  EXPECT_EQ(mixed_mig_resource_name("1g.5gb+me"), "nvidia.com/mig-1g.5gb.me");
  EXPECT_EQ(mixed_mig_resource_name("1c.3g.20gb"), "nvidia.com/mig-1c.3g.20gb");
  EXPECT_EQ(mixed_mig_resource_name("1g.10gb-me"), "nvidia.com/mig-1g.10gb-me");
  // NVIDIA v0.20's newer suffixes (issue 41).
  EXPECT_EQ(mixed_mig_resource_name("1g.24gb+me.all"), "nvidia.com/mig-1g.24gb.me.all");
  EXPECT_EQ(mixed_mig_resource_name("1g.24gb+gfx"), "nvidia.com/mig-1g.24gb.gfx");
}

TEST(ResourceNames, EverySuffixedProfileIsAResourceOfItsOwn) {
  // A GPU with a base, a +me, a -me, a +me.all and a +gfx 1g instance: five resources, none counted
  // with another (NVIDIA 0.17's unanchored patterns put the suffixed ones in the base's).
  Config c;
  c.mig_strategy = MigStrategy::Mixed;
  Gpu g = a100_mig(0, {});
  int j = 0;
  for (const char* profile : {"1g.24gb", "1g.24gb+me", "1g.24gb-me", "1g.24gb+me.all", "1g.24gb+gfx"})
    g.mig_devices.push_back(mig(0, j++, profile, 24));
  const auto p = plan(c, inventory_of({g}));
  EXPECT_THAT(names_of(p), ElementsAre("nvidia.com/mig-1g.24gb", "nvidia.com/mig-1g.24gb-me", "nvidia.com/mig-1g.24gb.gfx",
                                       "nvidia.com/mig-1g.24gb.me", "nvidia.com/mig-1g.24gb.me.all"));
  for (const auto& r : p.resources) EXPECT_EQ(r.devices.size(), 1u) << r.name;
}

TEST(ResourceNames, VendorDefaults) {
  Gpu amd;
  amd.vendor = Vendor::Amd;
  amd.uuid = "amd-0";
  Gpu intel_i915;
  intel_i915.vendor = Vendor::Intel;
  intel_i915.uuid = "intel-0";
  intel_i915.index = 1;
  intel_i915.attributes["driver"] = "i915";
  Gpu intel_xe = intel_i915;
  intel_xe.uuid = "intel-1";
  intel_xe.index = 2;
  intel_xe.attributes["driver"] = "xe";
  Gpu generic;
  generic.vendor = Vendor::Generic;
  generic.uuid = "npu-0";
  generic.index = 3;
  generic.attributes["resource"] = "example.com/npu";
  const auto p = plan(Config{}, inventory_of({a100(0), amd, intel_i915, intel_xe, generic}));
  EXPECT_THAT(names_of(p), ElementsAre("amd.com/gpu", "example.com/npu", "gpu.intel.com/i915", "gpu.intel.com/xe",
                                       "nvidia.com/gpu"));
  EXPECT_EQ(p.find("amd.com/gpu")->vendor, Vendor::Amd);
  EXPECT_THAT(ids_of(*p.find("gpu.intel.com/xe")), ElementsAre("intel-1"));
  EXPECT_TRUE(p.problems.empty());
}

TEST(ResourceNames, DeviceWithoutNameIsReportedNotServed) {
  Gpu intel;
  intel.vendor = Vendor::Intel;
  intel.uuid = "intel-0";
  Gpu generic;
  generic.vendor = Vendor::Generic;
  generic.uuid = "x";
  generic.index = 1;
  const auto p = plan(Config{}, inventory_of({intel, generic}));
  EXPECT_TRUE(p.resources.empty());
  ASSERT_EQ(p.problems.size(), 2u);
  EXPECT_THAT(p.problems[0], HasSubstr("driver"));
  EXPECT_THAT(p.problems[1], HasSubstr("no resource name"));
}

TEST(ResourceNames, GpuPatternsRenameByProductWithDefaultFallback) {
  Config c;
  c.gpu_resources = {{"*A100*", "nvidia.com/a100"}};
  Gpu t4 = a100(1);
  t4.product = "Tesla T4";
  t4.uuid = "GPU-t4";
  const auto p = plan(c, inventory_of({a100(0), t4}));
  EXPECT_THAT(names_of(p), ElementsAre("nvidia.com/a100", "nvidia.com/gpu"));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu")), ElementsAre("GPU-t4"));
}

TEST(DeviceIds, UuidAndIndexStrategies) {
  Config c;
  const Gpu g = a100_mig(3, {"1g.5gb", "2g.10gb"});
  EXPECT_EQ(gpu_device_id(c, g), "GPU-a100-0003");
  EXPECT_EQ(mig_device_id(c, g, g.mig_devices[1]), "MIG-3-1-2g.10gb");
  c.device_id_strategy = DeviceIdStrategy::Index;
  EXPECT_EQ(gpu_device_id(c, g), "3");
  EXPECT_EQ(mig_device_id(c, g, g.mig_devices[1]), "3:1");
  EXPECT_EQ(replica_id("GPU-x", 7), "GPU-x::7");
  EXPECT_EQ(strip_replica("GPU-x::7"), "GPU-x");
  EXPECT_EQ(strip_replica("3:1"), "3:1");
}

// Issue 21: deviceIDStrategy is "how device IDs are passed to the runtime". The kubelet keeps
// seeing stable IDs (UUIDs, UUID-based replica and MIG IDs) whatever it says, so its checkpoint and
// PodResources never hold indices that change meaning after a reboot.
TEST(DeviceIds, IndexStrategyNeverReachesTheKubelet) {
  Config c;
  c.device_id_strategy = DeviceIdStrategy::Index;
  const Gpu g = a100_mig(3, {"1g.5gb", "2g.10gb"});
  EXPECT_EQ(advertised_gpu_id(g), "GPU-a100-0003");
  EXPECT_EQ(advertised_mig_id(g, g.mig_devices[1]), "MIG-3-1-2g.10gb");
  const auto whole = plan(c, inventory_of({a100(0), a100(1)}));
  EXPECT_THAT(ids_of(*whole.find("nvidia.com/gpu")), ElementsAre("GPU-a100-0000", "GPU-a100-0001"));
  c.time_slicing.resources = {replicated("nvidia.com/gpu", 2)};
  const auto shared = plan(c, inventory_of({a100(0), a100(1)}));
  EXPECT_THAT(ids_of(*shared.find("nvidia.com/gpu")),
              ElementsAre("GPU-a100-0000::0", "GPU-a100-0000::1", "GPU-a100-0001::0", "GPU-a100-0001::1"));
  // The same plan as with the default strategy: switching strategies changes no advertised ID.
  Config uuid = c;
  uuid.device_id_strategy = DeviceIdStrategy::Uuid;
  EXPECT_EQ(plan(uuid, inventory_of({a100(0), a100(1)})), shared);
}

TEST(DeviceIds, DevicesWithoutUuidFallBackToTheirIndex) {
  Gpu g = a100_mig(2, {"1g.5gb"});
  g.uuid.clear();
  g.mig_devices[0].uuid.clear();
  EXPECT_EQ(advertised_gpu_id(g), "2");
  EXPECT_EQ(advertised_mig_id(g, g.mig_devices[0]), "2:0");
}

TEST(DeviceIds, IndexStrategyDoesNotApplyToOtherVendors) {
  Config c;
  c.device_id_strategy = DeviceIdStrategy::Index;
  Gpu amd;
  amd.vendor = Vendor::Amd;
  amd.uuid = "0x1234abcd";
  amd.index = 5;
  EXPECT_EQ(gpu_device_id(c, amd), "0x1234abcd");
  amd.uuid.clear();
  EXPECT_EQ(gpu_device_id(c, amd), "5");
}

TEST(Plan, HealthAndNumaComeFromTheGpu) {
  Gpu sick = a100(1, 1);
  sick.health = {false, "XID 79"};
  Gpu no_numa = a100(2);
  no_numa.numa_node.reset();
  const auto p = plan(Config{}, inventory_of({a100(0, 0), sick, no_numa}));
  const Resource* r = p.find("nvidia.com/gpu");
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->devices.size(), 3u);
  EXPECT_TRUE(r->devices[0].healthy);
  EXPECT_FALSE(r->devices[1].healthy);
  EXPECT_THAT(r->devices[0].numa_nodes, ElementsAre(0));
  EXPECT_THAT(r->devices[1].numa_nodes, ElementsAre(1));
  EXPECT_TRUE(r->devices[2].numa_nodes.empty());
  EXPECT_EQ(r->devices[1].gpu, 1u);
  EXPECT_FALSE(r->devices[1].mig.has_value());
  EXPECT_EQ(r->devices[1].replica, -1);
}

TEST(Plan, DuplicateIdsAreDroppedWithAProblem) {
  Gpu twin = a100(1);
  twin.uuid = "GPU-a100-0000";
  const auto p = plan(Config{}, inventory_of({a100(0), twin}));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu")), ElementsAre("GPU-a100-0000"));
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_THAT(p.problems[0], HasSubstr("twice"));
}

TEST(Plan, EmptyInventoryGivesEmptyPlan) {
  const auto p = plan(Config{}, Inventory{});
  EXPECT_TRUE(p.resources.empty());
  EXPECT_TRUE(p.problems.empty());
}

}  // namespace
}  // namespace kgpu
