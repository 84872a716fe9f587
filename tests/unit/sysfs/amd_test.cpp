#include <gtest/gtest.h>

#include <algorithm>

#include "fixture_tree.h"
#include "sysfs/backends.h"

namespace kgpu {
namespace {

using testing::FixtureCopy;
using testing::fixture_roots;

bool has_warning(const Inventory& inv, const std::string& needle) {
  return std::any_of(inv.warnings.begin(), inv.warnings.end(),
                     [&](const std::string& w) { return w.find(needle) != std::string::npos; });
}

TEST(AmdBackend, Mi210NodeHasTwoGpusWithKfdFacts) {
  auto inv = discover_amd(fixture_roots("amd-mi210"));
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_TRUE(inv->warnings.empty()) << inv->warnings.front();
  ASSERT_EQ(inv->gpus.size(), 2u);
  const Gpu& g = inv->gpus[0];
  EXPECT_EQ(g.vendor, Vendor::Amd);
  EXPECT_EQ(g.uuid, "0000:03:00.0");
  EXPECT_EQ(g.pci_bus_id, "0000:03:00.0");
  EXPECT_EQ(g.product, "AMD Instinct MI210");
  EXPECT_EQ(g.memory_bytes, 68702699520u);
  EXPECT_EQ(g.numa_node, 0);
  EXPECT_EQ(inv->gpus[1].numa_node, 1);
  EXPECT_EQ(g.pci_device_id, 0x740f1002u);
  EXPECT_TRUE(g.health.healthy);
  ASSERT_EQ(g.device_nodes.size(), 2u);
  EXPECT_EQ(g.device_nodes[0].path, "/dev/dri/card1");
  EXPECT_EQ(g.device_nodes[1].path, "/dev/dri/renderD128");
  EXPECT_EQ(inv->gpus[1].device_nodes[1].path, "/dev/dri/renderD129");
  EXPECT_EQ(g.attributes.at("family"), "AI");
  EXPECT_EQ(g.attributes.at("gfx-target"), "gfx90a");
  EXPECT_EQ(g.attributes.at("device-id"), "740f");
  EXPECT_EQ(g.attributes.at("cu-count"), "104");
  EXPECT_EQ(g.attributes.at("simd-count"), "416");
  EXPECT_EQ(g.attributes.at("vram"), "64G");
  EXPECT_EQ(g.attributes.at("kfd-unique-id"), "123456789abcdef0");
  EXPECT_EQ(g.attributes.count("compute-partition"), 0u);
  EXPECT_EQ(inv->gpus[1].index, 1);
}

TEST(AmdBackend, Mi300xCpxPartitionsBecomeOneGpuEach) {
  auto inv = discover_amd(fixture_roots("amd-mi300x"));
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_TRUE(inv->warnings.empty()) << inv->warnings.front();
  ASSERT_EQ(inv->gpus.size(), 16u);
  const Gpu& p0 = inv->gpus[0];
  const Gpu& p3 = inv->gpus[3];
  const Gpu& second = inv->gpus[8];
  EXPECT_EQ(p0.uuid, "0000:0c:00.0-xcp0");
  EXPECT_EQ(p3.uuid, "0000:0c:00.0-xcp3");
  EXPECT_EQ(second.uuid, "0000:22:00.0-xcp0");
  EXPECT_EQ(p3.pci_bus_id, "0000:0c:00.0");
  EXPECT_EQ(p3.attributes.at("partition-index"), "3");
  EXPECT_EQ(p3.attributes.at("partitions"), "8");
  EXPECT_EQ(p3.attributes.at("compute-partition"), "cpx");
  EXPECT_EQ(p3.attributes.at("memory-partition"), "nps4");
  EXPECT_EQ(p3.attributes.at("available-compute-partitions"), "spx, dpx, qpx, cpx");
  EXPECT_EQ(p3.attributes.at("cu-count"), "38");
  EXPECT_EQ(p3.attributes.at("gfx-target"), "gfx942");
  EXPECT_EQ(p3.attributes.at("family"), "AI");
  EXPECT_EQ(p3.product, "AMD Instinct MI300X");
  EXPECT_EQ(p3.memory_bytes, 206158430208u / 8);
  ASSERT_EQ(p3.device_nodes.size(), 2u);
  EXPECT_EQ(p3.device_nodes[0].path, "/dev/dri/card3");  // from /sys/devices/platform/amdgpu_xcp_2
  EXPECT_EQ(p3.device_nodes[1].path, "/dev/dri/renderD131");
  EXPECT_EQ(p0.device_nodes[0].path, "/dev/dri/card0");
  EXPECT_EQ(second.device_nodes[1].path, "/dev/dri/renderD136");
  EXPECT_EQ(second.numa_node, 1);
}

TEST(AmdBackend, NoDriverIsAnErrorNamingThePaths) {
  auto inv = discover_amd(fixture_roots("intel-flex-arc"));
  ASSERT_FALSE(inv.ok());
  EXPECT_EQ(inv.error().code, Error::Code::Unavailable);
  EXPECT_NE(inv.error().message.find("/bus/pci/drivers/amdgpu"), std::string::npos);
  EXPECT_FALSE(amd_present(fixture_roots("intel-flex-arc")));
  EXPECT_TRUE(amd_present(fixture_roots("amd-mi210")));
}

TEST(AmdBackend, ModuleDriverPathIsTheFallback) {
  FixtureCopy t("amd-mi210");
  t.remove("sys/bus/pci/drivers/amdgpu");
  std::filesystem::create_directories(t.path("sys/module/amdgpu/drivers/pci:amdgpu"));
  std::filesystem::create_directory_symlink("../../../../devices/pci0000:00/0000:83:00.0",
                                            t.path("sys/module/amdgpu/drivers/pci:amdgpu/0000:83:00.0"));
  auto inv = discover_amd(t.roots());
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  ASSERT_EQ(inv->gpus.size(), 1u);
  EXPECT_EQ(inv->gpus[0].uuid, "0000:83:00.0");
}

TEST(AmdBackend, MalformedVramSkipsOnlyThatGpuAndNamesThePath) {
  FixtureCopy t("amd-mi210");
  t.write("sys/devices/pci0000:00/0000:03:00.0/mem_info_vram_total", "lots\n");
  auto inv = discover_amd(t.roots());
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->gpus.size(), 1u);
  EXPECT_EQ(inv->gpus[0].uuid, "0000:83:00.0");
  EXPECT_EQ(inv->gpus[0].index, 0);
  ASSERT_EQ(inv->warnings.size(), 1u);
  EXPECT_NE(inv->warnings[0].find(t.path("sys/bus/pci/drivers/amdgpu/0000:03:00.0/mem_info_vram_total")),
            std::string::npos)
      << inv->warnings[0];
  EXPECT_NE(inv->warnings[0].find("skipped"), std::string::npos);
}

TEST(AmdBackend, MissingDeviceIdFileSkipsTheGpu) {
  FixtureCopy t("amd-mi210");
  t.remove("sys/devices/pci0000:00/0000:83:00.0/device");
  auto inv = discover_amd(t.roots());
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->gpus.size(), 1u);
  EXPECT_EQ(inv->gpus[0].uuid, "0000:03:00.0");
  EXPECT_TRUE(has_warning(*inv, "0000:83:00.0/device"));
}

TEST(AmdBackend, MissingRenderNodeSkipsTheGpu) {
  FixtureCopy t("amd-mi210");
  t.remove("sys/devices/pci0000:00/0000:83:00.0/drm/renderD129");
  auto inv = discover_amd(t.roots());
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->gpus.size(), 1u);
  EXPECT_TRUE(has_warning(*inv, "0000:83:00.0/drm has no renderD node"));
}

TEST(AmdBackend, MissingDevNodeSkipsTheGpu) {
  FixtureCopy t("amd-mi210");
  t.remove("dev/dri/renderD128");
  auto inv = discover_amd(t.roots());
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->gpus.size(), 1u);
  EXPECT_EQ(inv->gpus[0].uuid, "0000:83:00.0");
  EXPECT_TRUE(has_warning(*inv, t.path("dev/dri/renderD128")));
}

TEST(AmdBackend, MalformedKfdPropertiesLeaveTheGpuUnhealthyNotGone) {
  FixtureCopy t("amd-mi210");
  t.write("sys/class/kfd/kfd/topology/nodes/3/properties", "simd_count many\n");
  auto inv = discover_amd(t.roots());
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->gpus.size(), 2u);
  EXPECT_TRUE(inv->gpus[0].health.healthy);
  EXPECT_FALSE(inv->gpus[1].health.healthy);
  EXPECT_NE(inv->gpus[1].health.reason.find("KFD"), std::string::npos);
  EXPECT_TRUE(has_warning(*inv, t.path("sys/class/kfd/kfd/topology/nodes/3/properties")));
}

TEST(AmdBackend, MissingKfdTopologyIsAWarning) {
  FixtureCopy t("amd-mi210");
  t.remove("sys/class/kfd");
  auto inv = discover_amd(t.roots());
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->gpus.size(), 2u);
  EXPECT_FALSE(inv->gpus[0].health.healthy);
  EXPECT_TRUE(has_warning(*inv, t.path("sys/class/kfd/kfd/topology/nodes")));
}

TEST(AmdBackend, NegativeNumaNodeMeansUnknown) {
  FixtureCopy t("amd-mi210");
  t.write("sys/devices/pci0000:00/0000:03:00.0/numa_node", "-1\n");
  auto inv = discover_amd(t.roots());
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->gpus.size(), 2u);
  EXPECT_FALSE(inv->gpus[0].numa_node.has_value());
  EXPECT_TRUE(inv->warnings.empty());
}

TEST(AmdBackend, MissingPartitionCardStillServesTheRenderNode) {
  FixtureCopy t("amd-mi300x");
  t.remove("sys/devices/platform/amdgpu_xcp_0");
  auto inv = discover_amd(t.roots());
  ASSERT_TRUE(inv.ok());
  ASSERT_EQ(inv->gpus.size(), 16u);
  ASSERT_EQ(inv->gpus[1].device_nodes.size(), 1u);
  EXPECT_EQ(inv->gpus[1].device_nodes[0].path, "/dev/dri/renderD129");
}

}  // namespace
}  // namespace kgpu
