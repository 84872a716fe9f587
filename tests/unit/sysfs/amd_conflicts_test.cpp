// Issue 20 item 11: KFD/PCI answers that would make kgpu hand one device node out twice or
// advertise a truncated PCI id.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>

#include "fixture_tree.h"
#include "sysfs/backends.h"

namespace kgpu {
namespace {

using testing::FixtureCopy;

bool has_warning(const Inventory& inv, const std::string& needle) {
  return std::any_of(inv.warnings.begin(), inv.warnings.end(),
                     [&](const std::string& w) { return w.find(needle) != std::string::npos; });
}

// Rewrites the "drm_render_minor" line of one KFD node's properties.
void set_render_minor(const FixtureCopy& t, const std::string& node, int minor) {
  std::string rel = "sys/class/kfd/kfd/topology/nodes/" + node + "/properties";
  std::ifstream in(t.path(rel));
  std::string out;
  for (std::string line; std::getline(in, line);)
    out += (line.rfind("drm_render_minor ", 0) == 0 ? "drm_render_minor " + std::to_string(minor) : line) + "\n";
  in.close();
  t.write(rel, out);
}

// Regression: two partitions whose KFD nodes name the same render minor became two healthy
// devices on one /dev/dri/renderD128, the same node handed to two containers.
TEST(AmdConflicts, TwoPartitionsOnOneRenderNodeAreNotServed) {
  FixtureCopy t("amd-mi300x");
  set_render_minor(t, "2", 128);  // node 1 (partition 0 of the first GPU) names 128 already
  auto inv = discover_amd(t.roots());
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  ASSERT_EQ(inv->gpus.size(), 16u);
  int on_128 = 0;
  for (const auto& g : inv->gpus) {
    bool uses_128 = std::any_of(g.device_nodes.begin(), g.device_nodes.end(),
                                [](const DeviceNodeRef& n) { return n.path == "/dev/dri/renderD128"; });
    if (!uses_128) {
      EXPECT_TRUE(g.health.healthy) << g.uuid;
      continue;
    }
    ++on_128;
    EXPECT_FALSE(g.health.healthy) << g.uuid;
    EXPECT_NE(g.health.reason.find("renderD128"), std::string::npos) << g.health.reason;
  }
  EXPECT_EQ(on_128, 2);
  EXPECT_TRUE(has_warning(*inv, "all name renderD128")) << ::testing::PrintToString(inv->warnings);
}

TEST(AmdConflicts, TwoGpusClaimingOneRenderMinorAreBothUnhealthy) {
  FixtureCopy t("amd-mi210");
  set_render_minor(t, "3", 128);
  auto inv = discover_amd(t.roots());
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  ASSERT_EQ(inv->gpus.size(), 2u);
  EXPECT_FALSE(inv->gpus[0].health.healthy);
  EXPECT_FALSE(inv->gpus[1].health.healthy);
  EXPECT_TRUE(has_warning(*inv, "nodes/2"));
  EXPECT_TRUE(has_warning(*inv, "nodes/3"));
}

// Regression: a PCI device id wider than 16 bits was truncated into the advertised id.
TEST(AmdConflicts, SixtyFourBitPciDeviceIdIsRefused) {
  FixtureCopy t("amd-mi210");
  t.write("sys/devices/pci0000:00/0000:83:00.0/device", "0x1234567800007408\n");
  auto inv = discover_amd(t.roots());
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  ASSERT_EQ(inv->gpus.size(), 1u);
  EXPECT_EQ(inv->gpus[0].uuid, "0000:03:00.0");
  EXPECT_TRUE(has_warning(*inv, "not a 16-bit value")) << ::testing::PrintToString(inv->warnings);
}

}  // namespace
}  // namespace kgpu
