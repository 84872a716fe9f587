// Time-slicing and MPS replicas: naming, selectors, limits and refusals.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plan/plan.h"
#include "plan/sharing.h"
#include "unit/plan/inventories.h"

namespace kgpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace kgpu::test;

Config time_sliced(std::vector<ReplicatedResource> rs, bool rename_by_default = false) {
  Config c;
  c.time_slicing.rename_by_default = rename_by_default;
  c.time_slicing.resources = std::move(rs);
  return c;
}

Config mps(std::vector<ReplicatedResource> rs, bool rename_by_default = false) {
  Config c;
  c.mps_root = "/run/nvidia/mps";
  c.mps = ReplicatedResources{};
  c.mps->rename_by_default = rename_by_default;
  c.mps->resources = std::move(rs);
  return c;
}

TEST(TimeSlicing, TwoGpusFiveReplicasRenameByDefault) {
  // The example from the field: 10 × nvidia.com/gpu.shared and no nvidia.com/gpu.
  const auto p = plan(time_sliced({replicated("nvidia.com/gpu", 5)}, true), inventory_of({a100(0), a100(1)}));
  EXPECT_THAT(names_of(p), ElementsAre("nvidia.com/gpu.shared"));
  const Resource& r = p.resources[0];
  EXPECT_EQ(r.sharing, SharingKind::TimeSlicing);
  EXPECT_EQ(r.replicas, 5);
  EXPECT_FALSE(r.fail_requests_greater_than_one);
  EXPECT_THAT(ids_of(r), ElementsAre("GPU-a100-0000::0", "GPU-a100-0000::1", "GPU-a100-0000::2", "GPU-a100-0000::3",
                                     "GPU-a100-0000::4", "GPU-a100-0001::0", "GPU-a100-0001::1", "GPU-a100-0001::2",
                                     "GPU-a100-0001::3", "GPU-a100-0001::4"));
  EXPECT_EQ(r.devices[7].gpu, 1u);
  EXPECT_EQ(r.devices[7].replica, 2);
  EXPECT_THAT(p.problems, IsEmpty());
}

TEST(TimeSlicing, WithoutRenameKeepsTheName) {
  const auto p = plan(time_sliced({replicated("nvidia.com/gpu", 3)}), inventory_of({a100(0)}));
  EXPECT_THAT(names_of(p), ElementsAre("nvidia.com/gpu"));
  EXPECT_THAT(ids_of(p.resources[0]), ElementsAre("GPU-a100-0000::0", "GPU-a100-0000::1", "GPU-a100-0000::2"));
}

TEST(TimeSlicing, ExplicitRenameWins) {
  const auto p = plan(time_sliced({replicated("nvidia.com/gpu", 2, {}, "nvidia.com/slice")}, true),
                      inventory_of({a100(0)}));
  EXPECT_THAT(names_of(p), ElementsAre("nvidia.com/slice"));
}

TEST(TimeSlicing, ReplicasKeepHealthAndNuma) {
  Gpu sick = a100(1, 1);
  sick.health = {false, "XID 79"};
  const auto p = plan(time_sliced({replicated("nvidia.com/gpu", 2)}), inventory_of({a100(0), sick}));
  const Resource& r = p.resources[0];
  ASSERT_EQ(r.devices.size(), 4u);
  EXPECT_TRUE(r.devices[1].healthy);
  EXPECT_FALSE(r.devices[2].healthy);
  EXPECT_FALSE(r.devices[3].healthy);
  EXPECT_THAT(r.devices[3].numa_nodes, ElementsAre(1));
}

TEST(TimeSlicing, CountSelectsTheFirstDevicesRestStayUnshared) {
  const auto p = plan(time_sliced({replicated("nvidia.com/gpu", 2, select_count(1))}, true),
                      inventory_of({a100(0), a100(1)}));
  EXPECT_THAT(names_of(p), ElementsAre("nvidia.com/gpu", "nvidia.com/gpu.shared"));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu")), ElementsAre("GPU-a100-0001"));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu.shared")), ElementsAre("GPU-a100-0000::0", "GPU-a100-0000::1"));
}

TEST(TimeSlicing, CountAboveTheNodeSharesAllWithAProblem) {
  const auto p = plan(time_sliced({replicated("nvidia.com/gpu", 2, select_count(5))}), inventory_of({a100(0)}));
  EXPECT_EQ(p.resources[0].devices.size(), 2u);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_THAT(p.problems[0], HasSubstr("asks for 5 devices but the node has 1"));
}

TEST(TimeSlicing, ListSelectsByIndexAndUuid) {
  const auto p = plan(time_sliced({replicated("nvidia.com/gpu", 2, select_list({"2", "GPU-a100-0000"}))}, true),
                      inventory_of({a100(0), a100(1), a100(2)}));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu.shared")),
              ElementsAre("GPU-a100-0000::0", "GPU-a100-0000::1", "GPU-a100-0002::0", "GPU-a100-0002::1"));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu")), ElementsAre("GPU-a100-0001"));
  EXPECT_THAT(p.problems, IsEmpty());
}

TEST(TimeSlicing, PartialSelectionWithoutRenameMixesInOneResource) {
  const auto p = plan(time_sliced({replicated("nvidia.com/gpu", 2, select_list({"1"}))}),
                      inventory_of({a100(0), a100(1)}));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu")), ElementsAre("GPU-a100-0000", "GPU-a100-0001::0", "GPU-a100-0001::1"));
}

TEST(TimeSlicing, UnknownSelectorIsAProblem) {
  const auto p = plan(time_sliced({replicated("nvidia.com/gpu", 2, select_list({"7", "GPU-nope"}))}),
                      inventory_of({a100(0)}));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu")), ElementsAre("GPU-a100-0000"));
  ASSERT_EQ(p.problems.size(), 3u);
  EXPECT_THAT(p.problems[0], HasSubstr("\"7\""));
  EXPECT_THAT(p.problems[1], HasSubstr("\"GPU-nope\""));
  EXPECT_THAT(p.problems[2], HasSubstr("selects no device"));
}

TEST(TimeSlicing, AppliesToMigResourcesWithMigSelectors) {
  Config c = time_sliced({replicated("nvidia.com/mig-1g.5gb", 3, select_list({"0:1", "MIG-1-0-1g.5gb"}))});
  c.mig_strategy = MigStrategy::Mixed;
  const auto p = plan(c, inventory_of({a100_mig(0, {"1g.5gb", "1g.5gb"}), a100_mig(1, {"1g.5gb"})}));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/mig-1g.5gb")),
              ElementsAre("MIG-0-0-1g.5gb", "MIG-0-1-1g.5gb::0", "MIG-0-1-1g.5gb::1", "MIG-0-1-1g.5gb::2",
                          "MIG-1-0-1g.5gb::0", "MIG-1-0-1g.5gb::1", "MIG-1-0-1g.5gb::2"));
  EXPECT_EQ(p.find("nvidia.com/mig-1g.5gb")->devices[2].mig, 1u);
  EXPECT_THAT(p.problems, IsEmpty());
}

TEST(TimeSlicing, LegacyMigUuidAndWholeGpuSelectMigDevices) {
  Config c = time_sliced({replicated("nvidia.com/gpu", 2, select_list({"MIG-GPU-a100-0000/2/0", "1"}))}, true);
  c.mig_strategy = MigStrategy::Single;
  const auto p = plan(c, inventory_of({a100_mig(0, {"3g.20gb", "3g.20gb"}), a100_mig(1, {"3g.20gb", "3g.20gb"})}));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu.shared")),
              ElementsAre("MIG-0-1-3g.20gb::0", "MIG-0-1-3g.20gb::1", "MIG-1-0-3g.20gb::0", "MIG-1-0-3g.20gb::1",
                          "MIG-1-1-3g.20gb::0", "MIG-1-1-3g.20gb::1"));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu")), ElementsAre("MIG-0-0-3g.20gb"));
}

TEST(TimeSlicing, MissingResourceIsSkippedSilently) {
  const auto p = plan(time_sliced({replicated("nvidia.com/mig-1g.5gb", 2)}), inventory_of({a100(0)}));
  EXPECT_THAT(names_of(p), ElementsAre("nvidia.com/gpu"));
  EXPECT_THAT(p.problems, IsEmpty());
}

TEST(TimeSlicing, ExplicitFailRequestsGreaterThanOne) {
  Config c = time_sliced({replicated("nvidia.com/gpu", 2)});
  c.time_slicing.fail_requests_greater_than_one = true;
  EXPECT_TRUE(plan(c, inventory_of({a100(0)})).resources[0].fail_requests_greater_than_one);
}

TEST(TimeSlicing, RenameOntoAnExistingResourceIsRefused) {
  Config c = time_sliced({replicated("nvidia.com/mig-1g.5gb", 2, {}, "nvidia.com/gpu")});
  c.mig_strategy = MigStrategy::Mixed;
  const auto p = plan(c, inventory_of({a100_mig(0, {"1g.5gb"}), a100(1)}));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/mig-1g.5gb")), ElementsAre("MIG-0-0-1g.5gb"));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu")), ElementsAre("GPU-a100-0001"));
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_THAT(p.problems[0], HasSubstr("already a resource"));
}

TEST(TimeSlicing, TooFewReplicasIsAProblem) {
  const auto p = plan(time_sliced({replicated("nvidia.com/gpu", 1)}), inventory_of({a100(0)}));
  EXPECT_EQ(p.resources[0].sharing, SharingKind::None);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_THAT(p.problems[0], HasSubstr("at least 2"));
}

TEST(Mps, ReplicasWithDefaultFailRequestsGreaterThanOne) {
  const auto p = plan(mps({replicated("nvidia.com/gpu", 4)}, true), inventory_of({a100(0), a100(1)}));
  EXPECT_THAT(names_of(p), ElementsAre("nvidia.com/gpu.shared"));
  EXPECT_EQ(p.resources[0].sharing, SharingKind::Mps);
  EXPECT_EQ(p.resources[0].replicas, 4);
  EXPECT_TRUE(p.resources[0].fail_requests_greater_than_one);
  EXPECT_EQ(p.resources[0].devices.size(), 8u);
}

TEST(Mps, ExplicitFalseRelaxesTheLimit) {
  Config c = mps({replicated("nvidia.com/gpu", 4)});
  c.mps->fail_requests_greater_than_one = false;
  EXPECT_FALSE(plan(c, inventory_of({a100(0)})).resources[0].fail_requests_greater_than_one);
}

TEST(Mps, OnMigDevicesIsRefusedForThatResourceOnly) {
  Config c = mps({replicated("nvidia.com/gpu", 2)});
  c.mig_strategy = MigStrategy::Single;
  const auto p = plan(c, inventory_of({a100_mig(0, {"3g.20gb", "3g.20gb"})}));
  EXPECT_EQ(p.find("nvidia.com/gpu")->sharing, SharingKind::None);
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu")), ElementsAre("MIG-0-0-3g.20gb", "MIG-0-1-3g.20gb"));
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_THAT(p.problems[0], HasSubstr("MPS for nvidia.com/gpu is refused: MPS is not supported on MIG devices"));
}

TEST(Mps, WithMixedStrategyIsRefusedOthersStillShared) {
  Config c = mps({replicated("nvidia.com/gpu", 2)});
  c.mig_strategy = MigStrategy::Mixed;
  c.time_slicing.resources = {replicated("nvidia.com/mig-1g.5gb", 2)};
  const auto p = plan(c, inventory_of({a100(0), a100_mig(1, {"1g.5gb"})}));
  EXPECT_EQ(p.find("nvidia.com/gpu")->sharing, SharingKind::None);
  EXPECT_EQ(p.find("nvidia.com/mig-1g.5gb")->sharing, SharingKind::TimeSlicing);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_THAT(p.problems[0], HasSubstr("mig-strategy=mixed"));
}

TEST(Mps, NeedsMpsRoot) {
  Config c = mps({replicated("nvidia.com/gpu", 2)});
  c.mps_root.clear();
  const auto p = plan(c, inventory_of({a100(0)}));
  EXPECT_EQ(p.resources[0].sharing, SharingKind::None);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_THAT(p.problems[0], HasSubstr("mpsRoot"));
}

TEST(Mps, ReplicasAboveTheClientLimitAreRefused) {
  Gpu v100 = a100(0);
  v100.cc_major = 7;
  v100.cc_minor = 0;
  EXPECT_EQ(planner::mps_max_clients(v100), 16);
  EXPECT_EQ(planner::mps_max_clients(a100(0)), 48);
  const auto p = plan(mps({replicated("nvidia.com/gpu", 20)}), inventory_of({v100}));
  EXPECT_EQ(p.resources[0].sharing, SharingKind::None);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_THAT(p.problems[0], HasSubstr("20 replicas exceed the 16 MPS clients"));
}

TEST(Mps, WinsOverTimeSlicingForTheSameResource) {
  Config c = mps({replicated("nvidia.com/gpu", 2)});
  c.time_slicing.resources = {replicated("nvidia.com/gpu", 3)};
  const auto p = plan(c, inventory_of({a100(0)}));
  EXPECT_EQ(p.resources[0].sharing, SharingKind::Mps);
  EXPECT_EQ(p.resources[0].devices.size(), 2u);
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_THAT(p.problems[0], HasSubstr("more than once"));
}

TEST(Sharing, AppliesToOtherVendors) {
  Gpu amd;
  amd.vendor = Vendor::Amd;
  amd.uuid = "amd-0";
  const auto p = plan(time_sliced({replicated("amd.com/gpu", 2)}, true), inventory_of({amd}));
  EXPECT_THAT(names_of(p), ElementsAre("amd.com/gpu.shared"));
  EXPECT_EQ(p.resources[0].vendor, Vendor::Amd);
  EXPECT_THAT(ids_of(p.resources[0]), ElementsAre("amd-0::0", "amd-0::1"));
}

}  // namespace
}  // namespace kgpu
