#include <gtest/gtest.h>

#include "fixture_tree.h"
#include "sysfs/backends.h"

namespace kgpu {
namespace {

using testing::fixture;

TEST(ChooseBackends, AutoFollowsTheNode) {
  NodeFacts facts{true, true, false, false};
  auto c = choose_backends({"auto"}, facts);
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, (BackendChoice{true, true, false, false}));
  EXPECT_EQ(*choose_backends({}, facts), *c);
}

TEST(ChooseBackends, GenericRunsWhenGroupsAreDeclared) {
  auto c = choose_backends({"auto"}, NodeFacts{false, false, false, true});
  ASSERT_TRUE(c.ok());
  EXPECT_TRUE(c->generic);
}

TEST(ChooseBackends, NamesForceAndReplaceAuto) {
  auto c = choose_backends({"intel"}, NodeFacts{true, true, false, false});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, (BackendChoice{false, false, true, false}));
}

TEST(ChooseBackends, NegationDisablesEvenUnderAuto) {
  auto c = choose_backends({"-amd"}, NodeFacts{true, true, true, false});
  ASSERT_TRUE(c.ok());
  EXPECT_EQ(*c, (BackendChoice{true, false, true, false}));
  auto d = choose_backends({"auto", "amd", "-amd"}, NodeFacts{false, true, false, false});
  EXPECT_FALSE(d->amd);
}

TEST(ChooseBackends, UnknownNameIsAnError) {
  auto c = choose_backends({"auto", "tpu"}, NodeFacts{});
  ASSERT_FALSE(c.ok());
  EXPECT_NE(c.error().message.find("tpu"), std::string::npos);
}

Config fixture_config(const std::string& name) {
  Config c;
  c.sysfs_root = fixture(name) + "/sys";
  c.nvidia_driver_root = fixture(name);
  return c;
}

TEST(DiscoverSysfsBackends, MixedNodeFindsNvidiaDriverAndServesAmd) {
  Config c = fixture_config("mixed-nvidia-amd");
  NodeFacts facts = probe_node(c);
  EXPECT_TRUE(facts.nvidia);
  EXPECT_TRUE(facts.amd);
  EXPECT_FALSE(facts.intel);
  Inventory inv = discover_sysfs_backends(c);
  ASSERT_EQ(inv.gpus.size(), 1u);
  EXPECT_EQ(inv.gpus[0].vendor, Vendor::Amd);
  EXPECT_EQ(inv.gpus[0].uuid, "0000:c1:00.0");
}

TEST(DiscoverSysfsBackends, AFailingForcedBackendIsAWarningAndOthersStillRun) {
  Config c = fixture_config("rdma");  // neither amdgpu nor a DRM class here
  c.device_groups.push_back({"example.com/rdma", {"/dev/infiniband/uverbs*"}, {}, {}, {}, 1, "rw", {}});
  c.backends = {"amd", "intel", "generic"};
  Inventory inv = discover_sysfs_backends(c);
  ASSERT_EQ(inv.gpus.size(), 2u);
  EXPECT_EQ(inv.gpus[0].vendor, Vendor::Generic);
  ASSERT_EQ(inv.warnings.size(), 2u);
  EXPECT_NE(inv.warnings[0].find("AMD backend failed"), std::string::npos);
  EXPECT_NE(inv.warnings[1].find("Intel backend failed"), std::string::npos);
}

TEST(DiscoverSysfsBackends, BadBackendNameIsAWarning) {
  Config c = fixture_config("amd-mi210");
  c.backends = {"quantum"};
  Inventory inv = discover_sysfs_backends(c);
  EXPECT_TRUE(inv.gpus.empty());
  ASSERT_EQ(inv.warnings.size(), 1u);
  EXPECT_NE(inv.warnings[0].find("quantum"), std::string::npos);
}

TEST(DiscoverSysfsBackends, EmptyNodeHasNothing) {
  Config c = fixture_config("empty");
  EXPECT_EQ(probe_node(c), NodeFacts{});
  Inventory inv = discover_sysfs_backends(c);
  EXPECT_TRUE(inv.gpus.empty());
  EXPECT_TRUE(inv.warnings.empty());
}

}  // namespace
}  // namespace kgpu

namespace kgpu {
namespace {

TEST(RescanWatchDirs, DriDirAndGroupPatternParents) {
  Config c;
  c.nvidia_driver_root = "/host";
  c.device_groups.push_back({"example.com/rdma", {"/dev/infiniband/uverbs*"}, {}, {}, {}, 1, "rw", {}});
  c.device_groups.push_back({"example.com/fpga", {"/dev/fpga*-mgmt", "/dev/fpga*-user"}, {}, {}, {}, 1, "rw", {}});
  auto dirs = rescan_watch_dirs(c, BackendChoice{true, true, false, true});
  EXPECT_EQ(dirs, (std::vector<std::string>{"/host/dev", "/host/dev/dri", "/host/dev/infiniband"}));
  EXPECT_TRUE(rescan_watch_dirs(c, BackendChoice{true, false, false, false}).empty());
}

}  // namespace
}  // namespace kgpu
