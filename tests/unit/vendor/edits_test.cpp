#include <gtest/gtest.h>

#include "plan/device_edits.h"
#include "sysfs/backends.h"

namespace kgpu {
namespace {

std::string tree(const std::string& name) { return std::string(KGPU_SYSFS_FIXTURES_DIR) + "/" + name; }

Inventory discover(Result<Inventory> r) {
  EXPECT_TRUE(r.ok());
  return r.ok() ? std::move(r).value() : Inventory{};
}

Config with_dev_root(const std::string& root) {
  Config c;
  c.nvidia_driver_root = root;
  return c;
}

Resource resource(const std::string& name, Vendor v) {
  Resource r;
  r.name = name;
  r.vendor = v;
  return r;
}

TEST(VendorEdits, AmdGetsKfdOnceAndEachGpusNodes) {
  Inventory inv = discover(discover_amd({tree("amd-mi210") + "/sys", tree("amd-mi210")}));
  Config c = with_dev_root("/host");
  ContainerEdits e = vendor_device_edits(c, inv, resource("amd.com/gpu", Vendor::Amd), {{0, {}}, {1, {}}});
  std::vector<DeviceSpec> want = {
      {"/dev/kfd", "/host/dev/kfd", "rw"},
      {"/dev/dri/card1", "/host/dev/dri/card1", "rw"},
      {"/dev/dri/renderD128", "/host/dev/dri/renderD128", "rw"},
      {"/dev/dri/card2", "/host/dev/dri/card2", "rw"},
      {"/dev/dri/renderD129", "/host/dev/dri/renderD129", "rw"},
  };
  EXPECT_EQ(e.devices, want);
  EXPECT_TRUE(e.mounts.empty());
  EXPECT_EQ(e.envs.at("ROCR_VISIBLE_DEVICES"), "GPU-123456789abcdef0,GPU-123456789abcdef1");
}

TEST(VendorEdits, AmdWithoutKfdUniqueIdSetsNoVisibleDevices) {
  Inventory inv = discover(discover_amd({tree("amd-mi210") + "/sys", tree("amd-mi210")}));
  inv.gpus[1].attributes.erase("kfd-unique-id");
  ContainerEdits e = vendor_device_edits(Config{}, inv, resource("amd.com/gpu", Vendor::Amd), {{0, {}}, {1, {}}});
  EXPECT_EQ(e.envs.count("ROCR_VISIBLE_DEVICES"), 0u);
  EXPECT_EQ(e.devices.front().host_path, "/dev/kfd");  // default dev root "/"
}

TEST(VendorEdits, Mi300xPartitionGetsItsOwnNodes) {
  Inventory inv = discover(discover_amd({tree("amd-mi300x") + "/sys", tree("amd-mi300x")}));
  ContainerEdits e = vendor_device_edits(Config{}, inv, resource("amd.com/gpu", Vendor::Amd), {{5, {}}});
  ASSERT_EQ(e.devices.size(), 3u);
  EXPECT_EQ(e.devices[1].container_path, "/dev/dri/card5");
  EXPECT_EQ(e.devices[2].container_path, "/dev/dri/renderD133");
}

TEST(VendorEdits, IntelGetsNodesAndReadOnlyByPathMounts) {
  Inventory inv = discover(discover_intel({tree("intel-flex-arc") + "/sys", tree("intel-flex-arc")}));
  ContainerEdits e = vendor_device_edits(with_dev_root("/"), inv, resource("gpu.intel.com/xe", Vendor::Intel), {{1, {}}});
  std::vector<DeviceSpec> devs = {{"/dev/dri/card1", "/dev/dri/card1", "rw"},
                                  {"/dev/dri/renderD129", "/dev/dri/renderD129", "rw"}};
  EXPECT_EQ(e.devices, devs);
  std::vector<Mount> mounts = {
      {"/dev/dri/by-path/pci-0000:4d:00.0-card", "/dev/dri/by-path/pci-0000:4d:00.0-card", true},
      {"/dev/dri/by-path/pci-0000:4d:00.0-render", "/dev/dri/by-path/pci-0000:4d:00.0-render", true}};
  EXPECT_EQ(e.mounts, mounts);
  EXPECT_TRUE(e.envs.empty());
}

TEST(VendorEdits, GenericGroupAddsSharedNodesOnceMountsAndEnv) {
  Config c = with_dev_root(tree("rdma"));
  GenericDeviceGroup g;
  g.resource = "example.com/rdma";
  g.devices = {"/dev/infiniband/uverbs*"};
  g.shared_devices = {"/dev/infiniband/rdma_cm"};
  g.mounts = {{"/etc/libibverbs.d", "/etc/libibverbs.d", true}};
  g.env = {{"RDMA_SHARED", "1"}};
  g.permissions = "rwm";
  c.device_groups = {g};
  Inventory inv = discover(discover_generic(c.device_groups, {tree("rdma") + "/sys", tree("rdma")}));
  ASSERT_EQ(inv.gpus.size(), 2u);
  ContainerEdits e = vendor_device_edits(c, inv, resource("example.com/rdma", Vendor::Generic), {{0, {}}, {1, {}}});
  ASSERT_EQ(e.devices.size(), 3u);
  EXPECT_EQ(e.devices[0].container_path, "/dev/infiniband/uverbs0");
  EXPECT_EQ(e.devices[0].host_path, tree("rdma") + "/dev/infiniband/uverbs0");
  EXPECT_EQ(e.devices[0].permissions, "rwm");
  EXPECT_EQ(e.devices[1].container_path, "/dev/infiniband/rdma_cm");
  EXPECT_EQ(e.devices[2].container_path, "/dev/infiniband/uverbs1");
  ASSERT_EQ(e.mounts.size(), 1u);
  EXPECT_EQ(e.mounts[0].container_path, "/etc/libibverbs.d");
  EXPECT_EQ(e.envs.at("RDMA_SHARED"), "1");
}

TEST(VendorEdits, OutOfRangeAndNvidiaDevicesAddNothing) {
  Inventory inv;
  inv.gpus.push_back(Gpu{});  // an NVIDIA GPU: nvidia_device_edits() owns it
  ContainerEdits e = vendor_device_edits(Config{}, inv, resource("nvidia.com/gpu", Vendor::Nvidia), {{0, {}}, {7, {}}});
  EXPECT_EQ(e, ContainerEdits{});
}

}  // namespace
}  // namespace kgpu
