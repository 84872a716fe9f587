#include <gtest/gtest.h>

#include <algorithm>

#include "fixture_tree.h"
#include "sysfs/backends.h"

namespace kgpu {
namespace {

using testing::FixtureCopy;
using testing::fixture_roots;

TEST(IntelBackend, FlexOnI915AndArcOnXe) {
  auto inv = discover_intel(fixture_roots("intel-flex-arc"));
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_TRUE(inv->warnings.empty()) << inv->warnings.front();
  ASSERT_EQ(inv->gpus.size(), 2u);
  const Gpu& flex = inv->gpus[0];
  const Gpu& arc = inv->gpus[1];
  EXPECT_EQ(flex.vendor, Vendor::Intel);
  EXPECT_EQ(flex.uuid, "0000:03:00.0");
  EXPECT_EQ(flex.attributes.at("driver"), "i915");
  EXPECT_EQ(arc.attributes.at("driver"), "xe");
  EXPECT_EQ(flex.attributes.at("device-id"), "56c0");
  EXPECT_EQ(flex.attributes.at("pci-class"), "0300");
  EXPECT_EQ(flex.attributes.at("card"), "card0");
  EXPECT_EQ(flex.product, "Intel Data Center GPU Flex 170");
  EXPECT_EQ(arc.product, "Intel Arc B580");
  EXPECT_EQ(flex.attributes.at("family"), "Flex_Series");
  EXPECT_EQ(arc.attributes.count("family"), 0u);
  EXPECT_EQ(flex.memory_bytes, 17179869184u);
  EXPECT_EQ(arc.memory_bytes, 12884901888u);
  EXPECT_EQ(flex.numa_node, 0);
  EXPECT_EQ(arc.numa_node, 1);
  EXPECT_EQ(flex.pci_device_id, 0x56c08086u);
  ASSERT_EQ(flex.device_nodes.size(), 2u);
  EXPECT_EQ(flex.device_nodes[0].path, "/dev/dri/card0");
  EXPECT_EQ(flex.device_nodes[1].path, "/dev/dri/renderD128");
  EXPECT_EQ(flex.attributes.at("by-path-links"), "pci-0000:03:00.0-card,pci-0000:03:00.0-render");
  EXPECT_EQ(arc.attributes.at("by-path-links"), "pci-0000:4d:00.0-card,pci-0000:4d:00.0-render");
  EXPECT_EQ(arc.attributes.at("tiles"), "1");
  EXPECT_TRUE(intel_present(fixture_roots("intel-flex-arc")));
  EXPECT_FALSE(intel_present(fixture_roots("amd-mi210")));
}

TEST(IntelBackend, SriovPfWithVfsIsSkippedAndVfsServed) {
  auto inv = discover_intel(fixture_roots("intel-sriov"));
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->gpus.size(), 2u);
  EXPECT_EQ(inv->gpus[0].uuid, "0000:4d:00.1");
  EXPECT_EQ(inv->gpus[1].uuid, "0000:4d:00.2");
  EXPECT_TRUE(inv->warnings.empty());
}

TEST(IntelBackend, NoDrmIsAnError) {
  auto inv = discover_intel(fixture_roots("rdma"));
  ASSERT_FALSE(inv.ok());
  EXPECT_NE(inv.error().message.find("/class/drm"), std::string::npos);
}

TEST(IntelBackend, AmdCardsAreIgnored) {
  auto inv = discover_intel(fixture_roots("amd-mi210"));
  ASSERT_TRUE(inv.ok());
  EXPECT_TRUE(inv->gpus.empty());
}

TEST(IntelBackend, OtherDriversAreNotOurs) {
  FixtureCopy t("intel-flex-arc");
  const std::string link = "sys/devices/pci0000:00/0000:00:01.0/0000:4d:00.0/driver";
  t.remove(link);
  std::filesystem::create_directory_symlink("../../../../bus/pci/drivers/vfio-pci", t.path(link));
  auto inv = discover_intel(t.roots());
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->gpus.size(), 1u);
  EXPECT_EQ(inv->gpus[0].attributes.at("driver"), "i915");
}

TEST(IntelBackend, MalformedDeviceIdSkipsThatGpuWithThePath) {
  FixtureCopy t("intel-flex-arc");
  t.write("sys/devices/pci0000:00/0000:00:01.0/0000:03:00.0/device", "0xzz\n");
  auto inv = discover_intel(t.roots());
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->gpus.size(), 1u);
  EXPECT_EQ(inv->gpus[0].uuid, "0000:4d:00.0");
  ASSERT_EQ(inv->warnings.size(), 1u);
  EXPECT_NE(inv->warnings[0].find(t.path("sys/class/drm/card0/device/device")), std::string::npos) << inv->warnings[0];
}

TEST(IntelBackend, MissingRenderDevNodeSkipsThatGpu) {
  FixtureCopy t("intel-flex-arc");
  t.remove("dev/dri/renderD129");
  auto inv = discover_intel(t.roots());
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->gpus.size(), 1u);
  ASSERT_EQ(inv->warnings.size(), 1u);
  EXPECT_NE(inv->warnings[0].find(t.path("dev/dri/renderD129")), std::string::npos);
}

TEST(IntelBackend, MissingByPathLinksAreSimplyNotMounted) {
  FixtureCopy t("intel-flex-arc");
  t.remove("dev/dri/by-path");
  auto inv = discover_intel(t.roots());
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->gpus.size(), 2u);
  EXPECT_EQ(inv->gpus[0].attributes.count("by-path-links"), 0u);
}

}  // namespace
}  // namespace kgpu
