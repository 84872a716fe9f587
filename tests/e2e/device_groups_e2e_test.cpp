// End to end, issue 18: generic device groups (RDMA, FPGA) from the project's own example config on
// the `rdma` sysfs fixture, through the real binary and the kubelet simulator; and (issue 13) a
// device-group config that once crashed the parser.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>

#include "e2e/sim_fixture.h"

namespace kgpu::test {
namespace {

const std::string kRdma = "example.com/rdma";
const std::string kFpga = "example.com/fpga";

class DeviceGroupsE2E : public SimE2E {
 protected:
  std::unique_ptr<ChildProcess> start_rdma_node() {
    PluginOptions options;
    options.fleet_file = "";
    options.fake_nvml = false;
    options.node_dir = std::string(KGPU_SYSFS_FIXTURES_DIR) + "/rdma";
    options.config_file = std::string(KGPU_FIXTURES_DIR) + "/configs/generic-rdma-fpga.yaml";
    return start(options);
  }

  static std::set<std::string> paths_of(const ContainerEdits& e) {
    std::set<std::string> out;
    for (const auto& d : e.devices) out.insert(d.container_path);
    return out;
  }
};

TEST_F(DeviceGroupsE2E, RdmaReplicasAreAdvertisedAndAllocatedLikeTimeSlicing) {
  auto plugin = start_rdma_node();
  // uverbs0 is the Mellanox port (the group's sysfs match), uverbs1 another vendor's: 8 IDs in all.
  ASSERT_TRUE(wait_healthy(kRdma, 8, 1, 8)) << diagnostics(*plugin);
  const auto ids = sim->snapshot().find(kRdma)->device_ids();
  std::vector<std::string> expected;
  for (int n = 0; n < 8; ++n) expected.push_back("uverbs0::" + std::to_string(n));
  EXPECT_EQ(ids, expected);

  auto edits = sim->allocate(kRdma, {ids[3]});
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  EXPECT_EQ(paths_of(*edits), (std::set<std::string>{"/dev/infiniband/uverbs0", "/dev/infiniband/rdma_cm"}));
  EXPECT_EQ(edits->envs["RDMA_SHARED"], "1");
  // Two replicas of one device: the node once.
  auto two = sim->allocate(kRdma, {ids[0], ids[7]});
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_EQ(two->devices.size(), 2u);
  auto preferred = sim->preferred(kRdma, ids, {}, 3);
  ASSERT_TRUE(preferred.ok()) << preferred.error().message;
  EXPECT_EQ(preferred->size(), 3u);
}

TEST_F(DeviceGroupsE2E, FpgaPairsComeTogetherWithTheirMount) {
  auto plugin = start_rdma_node();
  // fpga0 has both nodes; fpga1 lacks its user node and is skipped with a warning.
  ASSERT_TRUE(wait_healthy(kFpga, 1, 1, 1)) << diagnostics(*plugin);
  const auto ids = sim->snapshot().find(kFpga)->device_ids();
  ASSERT_EQ(ids, std::vector<std::string>{"fpga0-mgmt"});
  auto edits = sim->allocate(kFpga, ids);
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  EXPECT_EQ(paths_of(*edits), (std::set<std::string>{"/dev/fpga0-mgmt", "/dev/fpga0-user"}));
  ASSERT_EQ(edits->mounts.size(), 1u);
  EXPECT_EQ(edits->mounts[0].container_path, "/opt/xilinx");
  EXPECT_TRUE(edits->mounts[0].read_only);
}

// `deviceGroups: [{[a]: 1}]` made `kgpu config validate` (and a running plugin, on reload) die with
// YAML::TypedBadConversion. Now: an error with its position, exit status 1.
TEST(ConfigValidateE2E, NonTextKeyInDeviceGroupsIsAnErrorNotACrash) {
  TempDir work("kgpu-validate");
  const std::string file = work.write("x.yaml", "version: v1\nkgpu:\n  deviceGroups:\n    - {[a]: 1}\n");
  ProcessOptions p;
  p.argv = {kgpu_binary(), "config", "validate", file};
  ChildProcess validate(p, work.path(), "validate");
  const auto rc = validate.wait_exit(30s);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 1) << validate.stdout_text() << validate.stderr_text();
  EXPECT_NE(validate.stdout_text().find("must be text"), std::string::npos) << validate.stdout_text();
  EXPECT_EQ(validate.stderr_text().find("terminate"), std::string::npos) << validate.stderr_text();
}

}  // namespace
}  // namespace kgpu::test
