// Issue 18: `replicas` of kgpu.deviceGroups works like time-slicing replicas, through the same
// planning code: IDs "<id>::<n>", mapped back in Allocate, health projected, spread by preference.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <set>

#include "alloc/preferred.h"
#include "plan/allocate.h"
#include "plan/plan.h"
#include "unit/plan/inventories.h"

namespace kgpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using namespace kgpu::test;

const std::string kRdma = "example.com/rdma";

Gpu verbs(int index) {
  Gpu g;
  g.vendor = Vendor::Generic;
  g.index = index;
  g.uuid = "uverbs" + std::to_string(index);
  g.product = kRdma;
  g.device_nodes = {{"/dev/infiniband/uverbs" + std::to_string(index)}};
  g.attributes = {{"resource", kRdma}, {"group-index", "0"}};
  return g;
}

Config rdma_config(int replicas) {
  Config c;
  GenericDeviceGroup g;
  g.resource = kRdma;
  g.devices = {"/dev/infiniband/uverbs*"};
  g.shared_devices = {"/dev/infiniband/rdma_cm"};
  g.env = {{"RDMA_SHARED", "1"}};
  g.replicas = replicas;
  c.device_groups = {g};
  return c;
}

TEST(DeviceGroupReplicas, EachDeviceIsAdvertisedReplicasTimes) {
  const auto p = plan(rdma_config(4), inventory_of({verbs(0), verbs(1)}));
  EXPECT_THAT(p.problems, IsEmpty());
  const Resource* r = p.find(kRdma);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->sharing, SharingKind::TimeSlicing);
  EXPECT_EQ(r->replicas, 4);
  EXPECT_THAT(ids_of(*r), ElementsAre("uverbs0::0", "uverbs0::1", "uverbs0::2", "uverbs0::3", "uverbs1::0",
                                      "uverbs1::1", "uverbs1::2", "uverbs1::3"));
}

TEST(DeviceGroupReplicas, OneReplicaAdvertisesEachDeviceOnce) {
  const auto p = plan(rdma_config(1), inventory_of({verbs(0)}));
  EXPECT_THAT(ids_of(*p.find(kRdma)), ElementsAre("uverbs0"));
  EXPECT_EQ(p.find(kRdma)->sharing, SharingKind::None);
}

TEST(DeviceGroupReplicas, AllocateMapsReplicasBackToTheDevice) {
  const Config c = rdma_config(8);
  const Inventory inv = inventory_of({verbs(0), verbs(1)});
  const auto p = plan(c, inv);
  auto edits = allocate(c, inv, *p.find(kRdma), {"uverbs1::7", "uverbs0::2", "uverbs1::0"});
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  std::vector<std::string> nodes;
  for (const auto& d : edits->devices) nodes.push_back(d.container_path);
  EXPECT_THAT(nodes, ElementsAre("/dev/infiniband/uverbs1", "/dev/infiniband/rdma_cm", "/dev/infiniband/uverbs0"));
  EXPECT_EQ(edits->envs.at("RDMA_SHARED"), "1");
  EXPECT_FALSE(allocate(c, inv, *p.find(kRdma), {"uverbs0"}).ok()) << "the bare ID is not advertised";
}

TEST(DeviceGroupReplicas, HealthIsProjectedOntoEveryReplica) {
  Gpu sick = verbs(1);
  sick.health = {false, "sysfs node disappeared"};
  const auto p = plan(rdma_config(3), inventory_of({verbs(0), sick}));
  for (const auto& d : p.find(kRdma)->devices) EXPECT_EQ(d.healthy, d.id.starts_with("uverbs0")) << d.id;
}

TEST(DeviceGroupReplicas, PreferredAllocationSpreadsOverDevices) {
  const Config c = rdma_config(4);
  const Inventory inv = inventory_of({verbs(0), verbs(1), verbs(2)});
  const auto p = plan(c, inv);
  const Resource& r = *p.find(kRdma);
  auto chosen = preferred_allocation(c, inv, r, ids_of(r), {}, 3);
  ASSERT_TRUE(chosen.ok()) << chosen.error().message;
  std::set<std::string> devices;
  for (const auto& id : *chosen) devices.insert(id.substr(0, id.find("::")));
  EXPECT_EQ(devices.size(), 3u) << "distributed: one replica on each device";
}

TEST(DeviceGroupReplicas, TimeSlicingEntryForTheSameResourceWinsWithAProblem) {
  Config c = rdma_config(8);
  c.time_slicing.resources = {replicated(kRdma, 2)};
  const auto p = plan(c, inventory_of({verbs(0)}));
  EXPECT_THAT(ids_of(*p.find(kRdma)), ElementsAre("uverbs0::0", "uverbs0::1"));
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_THAT(p.problems[0], HasSubstr("device group replicas for example.com/rdma is configured more than once"));
}

TEST(DeviceGroupReplicas, OtherGroupsAndGpusAreUntouched) {
  Config c = rdma_config(2);
  GenericDeviceGroup fpga;
  fpga.resource = "example.com/fpga";
  fpga.devices = {"/dev/fpga*-mgmt"};
  c.device_groups.push_back(fpga);
  Gpu board = verbs(1);
  board.uuid = "fpga0-mgmt";
  board.attributes["resource"] = "example.com/fpga";
  const auto p = plan(c, inventory_of({a100(0), verbs(0), board}));
  EXPECT_THAT(ids_of(*p.find("nvidia.com/gpu")), ElementsAre("GPU-a100-0000"));
  EXPECT_THAT(ids_of(*p.find("example.com/fpga")), ElementsAre("fpga0-mgmt"));
  EXPECT_THAT(ids_of(*p.find(kRdma)), ElementsAre("uverbs0::0", "uverbs0::1"));
}

}  // namespace
}  // namespace kgpu
