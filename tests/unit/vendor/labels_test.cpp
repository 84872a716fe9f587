// Label golden files: tests/fixtures/sysfs/golden/<tree>.labels, one "key=value" per line.
// KGPU_UPDATE_GOLDEN=1 rewrites them (review the diff).
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "labels/vendor_labels.h"
#include "sysfs/backends.h"

namespace kgpu {
namespace {

std::string tree(const std::string& name) { return std::string(KGPU_SYSFS_FIXTURES_DIR) + "/" + name; }

std::string render(const std::map<std::string, std::string>& labels) {
  std::string out;
  for (const auto& [k, v] : labels) out += k + "=" + v + "\n";
  return out;
}

void check_golden(const std::string& name, const std::map<std::string, std::string>& labels) {
  const std::string path = std::string(KGPU_FIXTURES_DIR) + "/sysfs/golden/" + name + ".labels";
  const std::string got = render(labels);
  if (std::getenv("KGPU_UPDATE_GOLDEN")) std::ofstream(path) << got;
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden file " << path;
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(got, want.str()) << "golden " << path;
}

Config config_for(const std::string& name) {
  Config c;
  c.sysfs_root = tree(name) + "/sys";
  c.nvidia_driver_root = tree(name);
  return c;
}

TEST(VendorLabels, Mi210Golden) {
  auto labels = vendor_labels(discover_sysfs_backends(config_for("amd-mi210")));
  EXPECT_EQ(labels.at("amd.com/gpu.family"), "AI");
  EXPECT_EQ(labels.at("beta.amd.com/gpu.vram.64G"), "2");
  check_golden("amd-mi210", labels);
}

TEST(VendorLabels, Mi300xGoldenCountsPhysicalGpusAndPartitionMode) {
  auto labels = vendor_labels(discover_sysfs_backends(config_for("amd-mi300x")));
  EXPECT_EQ(labels.at("beta.amd.com/gpu.device-id.74a1"), "2");
  EXPECT_EQ(labels.at("amd.com/compute-memory-partition"), "cpx_nps4");
  EXPECT_EQ(labels.at("amd.com/compute-partitioning-supported"), "true");
  check_golden("amd-mi300x", labels);
}

TEST(VendorLabels, IntelGolden) {
  auto labels = vendor_labels(discover_sysfs_backends(config_for("intel-flex-arc")));
  EXPECT_EQ(labels.at("gpu.intel.com/millicores"), "2000");
  EXPECT_EQ(labels.at("gpu.intel.com/device-id.0300-56c0.present"), "true");
  check_golden("intel-flex-arc", labels);
}

TEST(VendorLabels, MixedNodeLabelsOnlyTheAmdPart) {
  auto labels = vendor_labels(discover_sysfs_backends(config_for("mixed-nvidia-amd")));
  check_golden("mixed-nvidia-amd", labels);
  for (const auto& [k, v] : labels) EXPECT_EQ(k.find("nvidia.com"), std::string::npos) << k;
}

TEST(VendorLabels, HeterogeneousAmdNodeDropsSingleValuedLabels) {
  Inventory inv = discover_sysfs_backends(config_for("amd-mi210"));
  inv.gpus[1].attributes["vram"] = "32G";
  auto labels = vendor_labels(inv);
  EXPECT_EQ(labels.count("amd.com/gpu.vram"), 0u);
  EXPECT_EQ(labels.at("beta.amd.com/gpu.vram.32G"), "1");
  EXPECT_EQ(labels.at("amd.com/gpu.family"), "AI");
}

TEST(VendorLabels, ManyIntelGpusSplitGpuNumbers) {
  Inventory inv;
  for (int i = 0; i < 40; ++i) {
    Gpu g;
    g.vendor = Vendor::Intel;
    g.pci_bus_id = "0000:" + std::to_string(10 + i) + ":00.0";
    g.attributes = {{"card", "card" + std::to_string(i)}, {"device-id", "56c0"}, {"pci-class", "0380"}};
    inv.gpus.push_back(g);
  }
  auto labels = vendor_labels(inv);
  ASSERT_TRUE(labels.count("gpu.intel.com/gpu-numbers2"));
  EXPECT_LE(labels.at("gpu.intel.com/gpu-numbers").size(), 63u);
  EXPECT_EQ(labels.at("gpu.intel.com/gpu-numbers").substr(0, 6), "0.1.2.");
  EXPECT_EQ(labels.at("gpu.intel.com/device-id.0380-56c0.count"), "40");
}

TEST(VendorLabels, NoVendorGpusNoLabels) { EXPECT_TRUE(vendor_labels(Inventory{}).empty()); }

TEST(LabelValue, SanitisesToKubernetesRules) {
  EXPECT_EQ(label_value("AMD Instinct MI210"), "AMD_Instinct_MI210");
  EXPECT_EQ(label_value("(x)"), "x");
  EXPECT_EQ(label_value(std::string(80, 'a')).size(), 63u);
  EXPECT_EQ(label_value(""), "");
}

}  // namespace
}  // namespace kgpu

namespace kgpu {
namespace {

TEST(VendorLabels, IntelSriovNodeNamesTheFlexFamily) {
  Config c;
  c.sysfs_root = std::string(KGPU_SYSFS_FIXTURES_DIR) + "/intel-sriov/sys";
  c.nvidia_driver_root = std::string(KGPU_SYSFS_FIXTURES_DIR) + "/intel-sriov";
  auto labels = vendor_labels(discover_sysfs_backends(c));
  EXPECT_EQ(labels.at("gpu.intel.com/family"), "Flex_Series");
  EXPECT_EQ(labels.at("gpu.intel.com/product"), "Flex_170");
  EXPECT_EQ(labels.at("gpu.intel.com/millicores"), "2000");  // the two VFs, not the PF
  EXPECT_EQ(labels.at("gpu.intel.com/gpu-numbers"), "1.2");
}

}  // namespace
}  // namespace kgpu
