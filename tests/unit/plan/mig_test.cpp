// MIG strategies none / single / mixed on A100-40GB layouts, including the invalid `single` nodes
// that must be repaired (served safely) rather than crash the daemon.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plan/plan.h"
#include "unit/plan/inventories.h"

namespace kgpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace kgpu::test;

Config with_strategy(MigStrategy s) {
  Config c;
  c.mig_strategy = s;
  return c;
}

TEST(MigNone, ServesWholeGpusAndIgnoresMigDevices) {
  const auto p = plan(with_strategy(MigStrategy::None),
                      inventory_of({a100_mig(0, {"1g.5gb", "1g.5gb"}), a100(1)}));
  EXPECT_THAT(names_of(p), ElementsAre("nvidia.com/gpu"));
  EXPECT_THAT(ids_of(p.resources[0]), ElementsAre("GPU-a100-0000", "GPU-a100-0001"));
  EXPECT_THAT(p.problems, IsEmpty());
}

TEST(MigSingle, UniformNodeServesMigDevicesAsGpu) {
  const std::vector<std::string> seven(7, "1g.5gb");
  const auto p = plan(with_strategy(MigStrategy::Single), inventory_of({a100_mig(0, seven), a100_mig(1, seven)}));
  EXPECT_THAT(names_of(p), ElementsAre("nvidia.com/gpu"));
  const Resource& r = p.resources[0];
  ASSERT_EQ(r.devices.size(), 14u);
  EXPECT_EQ(r.devices[0].id, "MIG-0-0-1g.5gb");
  EXPECT_EQ(r.devices[13].id, "MIG-1-6-1g.5gb");
  EXPECT_EQ(r.devices[13].gpu, 1u);
  EXPECT_EQ(r.devices[13].mig, 6u);
  EXPECT_THAT(p.problems, IsEmpty());
}

// deviceIDStrategy=index is for the runtime only (issue 21): the kubelet keeps seeing MIG UUIDs.
TEST(MigSingle, IndexStrategyStillAdvertisesMigUuids) {
  Config c = with_strategy(MigStrategy::Single);
  c.device_id_strategy = DeviceIdStrategy::Index;
  const auto p = plan(c, inventory_of({a100_mig(0, {"3g.20gb", "3g.20gb"}), a100_mig(1, {"3g.20gb", "3g.20gb"})}));
  EXPECT_THAT(ids_of(p.resources[0]),
              ElementsAre("MIG-0-0-3g.20gb", "MIG-0-1-3g.20gb", "MIG-1-0-3g.20gb", "MIG-1-1-3g.20gb"));
}

TEST(MigSingle, WithoutMigBehavesLikeNone) {
  const auto p = plan(with_strategy(MigStrategy::Single), inventory_of({a100(0), a100(1)}));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu")), ElementsAre("GPU-a100-0000", "GPU-a100-0001"));
  EXPECT_THAT(p.problems, IsEmpty());
}

TEST(MigSingle, MixedMigModesServeOnlyWholeGpus) {
  const auto p = plan(with_strategy(MigStrategy::Single),
                      inventory_of({a100_mig(0, {"1g.5gb", "1g.5gb"}), a100(1), a100(2)}));
  EXPECT_THAT(names_of(p), ElementsAre("nvidia.com/gpu"));
  EXPECT_THAT(ids_of(p.resources[0]), ElementsAre("GPU-a100-0001", "GPU-a100-0002"));
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_THAT(p.problems[0], HasSubstr("same MIG mode"));
  EXPECT_THAT(p.problems[0], HasSubstr("withholding every MIG device"));
}

TEST(MigSingle, SeveralProfilesServeTheMostCommonOne) {
  const auto p = plan(with_strategy(MigStrategy::Single),
                      inventory_of({a100_mig(0, {"1g.5gb", "1g.5gb", "1g.5gb", "2g.10gb"}),
                                    a100_mig(1, {"3g.20gb", "1g.5gb"})}));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu")),
              ElementsAre("MIG-0-0-1g.5gb", "MIG-0-1-1g.5gb", "MIG-0-2-1g.5gb", "MIG-1-1-1g.5gb"));
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_THAT(p.problems[0], HasSubstr("one MIG profile"));
  EXPECT_THAT(p.problems[0], HasSubstr("1g.5gb ×4"));
  EXPECT_THAT(p.problems[0], HasSubstr("serving only the 1g.5gb devices"));
}

TEST(MigSingle, ProfileTieGoesToTheLargerProfile) {
  const auto p = plan(with_strategy(MigStrategy::Single),
                      inventory_of({a100_mig(0, {"1g.5gb", "3g.20gb"})}));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu")), ElementsAre("MIG-0-1-3g.20gb"));
}

TEST(MigSingle, SubSliceAndMediaProfilesCountAsDifferentProfiles) {
  const auto p = plan(with_strategy(MigStrategy::Single),
                      inventory_of({a100_mig(0, {"1c.3g.20gb", "1c.3g.20gb", "3g.20gb"}),
                                    a100_mig(1, {"1g.5gb+me"})}));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu")), ElementsAre("MIG-0-0-1c.3g.20gb", "MIG-0-1-1c.3g.20gb"));
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_THAT(p.problems[0], HasSubstr("1g.5gb+me ×1"));
}

TEST(MigSingle, MigGpuWithoutInstancesIsReportedOthersServed) {
  const auto p = plan(with_strategy(MigStrategy::Single),
                      inventory_of({a100_mig(0, {}), a100_mig(1, {"2g.10gb", "2g.10gb"})}));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu")), ElementsAre("MIG-1-0-2g.10gb", "MIG-1-1-2g.10gb"));
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_THAT(p.problems[0], HasSubstr("GPU 0 (GPU-a100-0000) has MIG enabled but no MIG devices"));
}

TEST(MigMixed, EveryProfileGetsItsOwnResource) {
  const auto p = plan(with_strategy(MigStrategy::Mixed),
                      inventory_of({a100_mig(0, {"1g.5gb", "2g.10gb", "3g.20gb"}),
                                    a100_mig(1, {"1c.3g.20gb", "1c.3g.20gb", "1g.5gb+me"}), a100(2)}));
  EXPECT_THAT(names_of(p), ElementsAre("nvidia.com/gpu", "nvidia.com/mig-1c.3g.20gb", "nvidia.com/mig-1g.5gb",
                                       "nvidia.com/mig-1g.5gb.me", "nvidia.com/mig-2g.10gb",
                                       "nvidia.com/mig-3g.20gb"));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu")), ElementsAre("GPU-a100-0002"));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/mig-1c.3g.20gb")), ElementsAre("MIG-1-0-1c.3g.20gb", "MIG-1-1-1c.3g.20gb"));
  EXPECT_THAT(p.problems, IsEmpty());
}

TEST(MigMixed, EmptyMigGpuOnlyWarns) {
  const auto p = plan(with_strategy(MigStrategy::Mixed), inventory_of({a100_mig(0, {}), a100(1)}));
  EXPECT_THAT(names_of(p), ElementsAre("nvidia.com/gpu"));
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_THAT(p.problems[0], HasSubstr("mig-strategy=mixed"));
}

TEST(MigMixed, ConfigPatternsAreAnchoredAndFallBackToDefaults) {
  Config c = with_strategy(MigStrategy::Mixed);
  c.mig_resources = {{"1g.5gb", "nvidia.com/small"}, {"*.20gb", "nvidia.com/half"}};
  const auto p = plan(c, inventory_of({a100_mig(0, {"1g.5gb", "1g.5gb+me", "3g.20gb", "1c.3g.20gb"})}));
  EXPECT_THAT(names_of(p), ElementsAre("nvidia.com/half", "nvidia.com/mig-1g.5gb.me", "nvidia.com/small"));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/half")), ElementsAre("MIG-0-2-3g.20gb", "MIG-0-3-1c.3g.20gb"));
}

TEST(MigMixed, MigHealthFollowsTheParentGpu) {
  Gpu g = a100_mig(0, {"3g.20gb", "3g.20gb"});
  g.mig_devices[0].health = {false, "XID 48"};
  Gpu sick_parent = a100_mig(1, {"3g.20gb"});
  sick_parent.health = {false, "XID 79"};
  const auto p = plan(with_strategy(MigStrategy::Mixed), inventory_of({g, sick_parent}));
  const Resource* r = p.find("nvidia.com/mig-3g.20gb");
  ASSERT_NE(r, nullptr);
  ASSERT_EQ(r->devices.size(), 3u);
  EXPECT_FALSE(r->devices[0].healthy);
  EXPECT_TRUE(r->devices[1].healthy);
  EXPECT_FALSE(r->devices[2].healthy);
}

TEST(Plan, IsDeterministic) {
  const auto inv = inventory_of({a100_mig(1, {"2g.10gb", "1g.5gb"}), a100(0), a100_mig(2, {"1g.5gb"})});
  const auto a = plan(with_strategy(MigStrategy::Mixed), inv);
  const auto b = plan(with_strategy(MigStrategy::Mixed), inv);
  EXPECT_EQ(a, b);
  EXPECT_THAT(names_of(a), ElementsAre("nvidia.com/gpu", "nvidia.com/mig-1g.5gb", "nvidia.com/mig-2g.10gb"));
  EXPECT_THAT(ids_of(*a.find("nvidia.com/mig-1g.5gb")), ElementsAre("MIG-1-1-1g.5gb", "MIG-2-0-1g.5gb"));
}

}  // namespace
}  // namespace kgpu
