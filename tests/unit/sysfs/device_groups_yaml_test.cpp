#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "sysfs/backends.h"
#include "sysfs/device_groups_yaml.h"

namespace kgpu {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(DeviceGroupsYaml, ParsesTheShippedExample) {
  YAML::Node root = YAML::Load(read(std::string(KGPU_FIXTURES_DIR) + "/configs/generic-rdma-fpga.yaml"));
  auto groups = parse_device_groups(root["kgpu"]["deviceGroups"]);
  ASSERT_TRUE(groups.ok()) << groups.error().message;
  ASSERT_EQ(groups->size(), 2u);
  const auto& rdma = (*groups)[0];
  EXPECT_EQ(rdma.resource, "example.com/rdma");
  EXPECT_EQ(rdma.devices, std::vector<std::string>{"/dev/infiniband/uverbs*"});
  EXPECT_EQ(rdma.shared_devices, std::vector<std::string>{"/dev/infiniband/rdma_cm"});
  EXPECT_EQ(rdma.replicas, 8);
  EXPECT_EQ(rdma.env.at("RDMA_SHARED"), "1");
  ASSERT_EQ(rdma.sysfs_matches.size(), 1u);
  EXPECT_EQ(rdma.sysfs_matches[0].path, "/class/infiniband_verbs/uverbs*/device/vendor");
  EXPECT_EQ(rdma.sysfs_matches[0].equals, "0x15b3");
  const auto& fpga = (*groups)[1];
  EXPECT_EQ(fpga.devices.size(), 2u);
  ASSERT_EQ(fpga.mounts.size(), 1u);
  EXPECT_EQ(fpga.mounts[0].container_path, "/opt/xilinx");
  EXPECT_TRUE(fpga.mounts[0].read_only);
  EXPECT_EQ(fpga.permissions, "rw");
}

TEST(DeviceGroupsYaml, ShippedExampleServesTheRdmaFixture) {
  YAML::Node root = YAML::Load(read(std::string(KGPU_FIXTURES_DIR) + "/configs/generic-rdma-fpga.yaml"));
  auto groups = parse_device_groups(root["kgpu"]["deviceGroups"]);
  ASSERT_TRUE(groups.ok());
  const std::string tree = std::string(KGPU_SYSFS_FIXTURES_DIR) + "/rdma";
  auto inv = discover_generic(*groups, {tree + "/sys", tree});
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->gpus.size(), 2u);  // uverbs0 (Mellanox) and fpga0; uverbs1 is another vendor's
  EXPECT_EQ(inv->gpus[0].uuid, "uverbs0");
  EXPECT_EQ(inv->gpus[1].uuid, "fpga0-mgmt");
}

TEST(DeviceGroupsYaml, AbsentIsEmpty) {
  auto groups = parse_device_groups(YAML::Node());
  ASSERT_TRUE(groups.ok());
  EXPECT_TRUE(groups->empty());
}

struct BadCase {
  const char* yaml;
  const char* expect;
};

TEST(DeviceGroupsYaml, ErrorsNameTheProblemAndLine) {
  const BadCase cases[] = {
      {"- resource: rdma\n  devices: [/dev/x]\n", "<domain>/<name>"},
      {"- resource: a.com/b\n", "no \"devices\""},
      {"- resource: a.com/b\n  devices: [dev/x]\n", "absolute path"},
      {"- resource: a.com/b\n  devices: [/dev/x]\n  replicas: 0\n", "replicas"},
      {"- resource: a.com/b\n  devices: [/dev/x]\n  colour: red\n", "line 3"},
      {"- resource: a.com/b\n  devices: [/dev/x]\n  permissions: rwx\n", "permissions"},
      {"- resource: a.com/b\n  devices: [/dev/x]\n- resource: a.com/b\n  devices: [/dev/y]\n", "twice"},
      {"resource: a.com/b\n", "must be a list"},
      {"- resource: a.com/b\n  devices: [/dev/x]\n  sysfs: [{path: /x}]\n", "path and equals"},
  };
  for (const auto& c : cases) {
    auto r = parse_device_groups(YAML::Load(c.yaml));
    ASSERT_FALSE(r.ok()) << c.yaml;
    EXPECT_NE(r.error().message.find(c.expect), std::string::npos) << r.error().message;
  }
}

}  // namespace
}  // namespace kgpu
