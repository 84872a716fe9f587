#include <gtest/gtest.h>

#include "fixture_tree.h"
#include "sysfs/backends.h"

namespace kgpu {
namespace {

using testing::fixture_roots;

GenericDeviceGroup rdma() {
  GenericDeviceGroup g;
  g.resource = "example.com/rdma";
  g.devices = {"/dev/infiniband/uverbs*"};
  g.shared_devices = {"/dev/infiniband/rdma_cm"};
  g.replicas = 4;
  return g;
}

GenericDeviceGroup fpga() {
  GenericDeviceGroup g;
  g.resource = "example.com/fpga";
  g.devices = {"/dev/fpga*-mgmt", "/dev/fpga*-user"};
  return g;
}

TEST(GenericBackend, EachMatchedFileIsADevice) {
  auto inv = discover_generic({rdma()}, fixture_roots("rdma"));
  ASSERT_TRUE(inv.ok());
  EXPECT_TRUE(inv->warnings.empty());
  ASSERT_EQ(inv->gpus.size(), 2u);
  EXPECT_EQ(inv->gpus[0].vendor, Vendor::Generic);
  EXPECT_EQ(inv->gpus[0].uuid, "uverbs0");
  EXPECT_EQ(inv->gpus[1].uuid, "uverbs1");
  EXPECT_EQ(inv->gpus[1].index, 1);
  EXPECT_EQ(inv->gpus[0].attributes.at("resource"), "example.com/rdma");
  // replicas is a typed config field the planner reads, not a string attribute (issue 18).
  EXPECT_FALSE(inv->gpus[0].attributes.contains("replicas"));
  ASSERT_EQ(inv->gpus[0].device_nodes.size(), 1u);
  EXPECT_EQ(inv->gpus[0].device_nodes[0].path, "/dev/infiniband/uverbs0");
}

TEST(GenericBackend, CompanionNodesPairByTheStarAndMissingOnesSkipTheDevice) {
  auto inv = discover_generic({fpga()}, fixture_roots("rdma"));
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->gpus.size(), 1u);
  EXPECT_EQ(inv->gpus[0].uuid, "fpga0-mgmt");
  ASSERT_EQ(inv->gpus[0].device_nodes.size(), 2u);
  EXPECT_EQ(inv->gpus[0].device_nodes[1].path, "/dev/fpga0-user");
  ASSERT_EQ(inv->warnings.size(), 1u);
  EXPECT_NE(inv->warnings[0].find(testing::fixture("rdma") + "/dev/fpga1-user"), std::string::npos) << inv->warnings[0];
}

TEST(GenericBackend, MissingSharedNodeSkipsTheGroupButNotOthers) {
  auto broken = rdma();
  broken.shared_devices = {"/dev/infiniband/nope"};
  auto inv = discover_generic({broken, fpga()}, fixture_roots("rdma"));
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->gpus.size(), 1u);
  EXPECT_EQ(inv->gpus[0].attributes.at("resource"), "example.com/fpga");
  EXPECT_NE(inv->warnings[0].find("/dev/infiniband/nope"), std::string::npos);
}

TEST(GenericBackend, AFileClaimedTwiceBelongsToTheFirstGroup) {
  auto second = rdma();
  second.resource = "example.com/verbs";
  auto inv = discover_generic({rdma(), second}, fixture_roots("rdma"));
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->gpus.size(), 2u);
  EXPECT_EQ(inv->warnings.size(), 2u);
}

TEST(GenericBackend, SysfsMatchFiltersDevicesAndMissingFilesWarn) {
  auto g = rdma();
  g.sysfs_matches = {{"/class/infiniband_verbs/uverbs*/device/vendor", "0x15b3"}};
  auto inv = discover_generic({g}, fixture_roots("rdma"));
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->gpus.size(), 1u);
  EXPECT_EQ(inv->gpus[0].uuid, "uverbs0");
  EXPECT_TRUE(inv->warnings.empty());

  g.sysfs_matches = {{"/class/infiniband_verbs/uverbs*/device/numa_node", "0"}};
  inv = discover_generic({g}, fixture_roots("rdma"));
  ASSERT_TRUE(inv.ok());
  EXPECT_TRUE(inv->gpus.empty());
  ASSERT_EQ(inv->warnings.size(), 2u);
  EXPECT_NE(inv->warnings[0].find("uverbs0/device/numa_node"), std::string::npos) << inv->warnings[0];
}

TEST(GenericBackend, NoMatchesIsEmptyNotAnError) {
  auto inv = discover_generic({rdma()}, fixture_roots("amd-mi210"));
  ASSERT_TRUE(inv.ok());
  EXPECT_TRUE(inv->gpus.empty());
}

}  // namespace
}  // namespace kgpu
