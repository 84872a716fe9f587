#include <gtest/gtest.h>

#include "sysfs/amd_info.h"
#include "sysfs/fs_util.h"

namespace kgpu {
namespace {

TEST(AmdInfo, ParsesKfdProperties) {
  auto p = amd::parse_kfd_properties("cpu_cores_count 0\nsimd_count 416\n\ngfx_target_version 90010\n");
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->at("simd_count"), 416u);
  EXPECT_EQ(p->at("gfx_target_version"), 90010u);
  EXPECT_EQ(p->size(), 3u);
}

TEST(AmdInfo, MalformedPropertiesNameTheLine) {
  auto p = amd::parse_kfd_properties("simd_count 4\nbroken\n");
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("line 2"), std::string::npos);
  EXPECT_FALSE(amd::parse_kfd_properties("simd_count x\n").ok());
}

TEST(AmdInfo, GfxTargetNames) {
  EXPECT_EQ(amd::gfx_target_name(90010), "gfx90a");
  EXPECT_EQ(amd::gfx_target_name(90402), "gfx942");
  EXPECT_EQ(amd::gfx_target_name(90008), "gfx908");
  EXPECT_EQ(amd::gfx_target_name(110000), "gfx1100");
  EXPECT_EQ(amd::gfx_target_name(0), "");
}

TEST(AmdInfo, FamiliesFollowTheLabeller) {
  EXPECT_EQ(amd::family_name(90010, false), "AI");
  EXPECT_EQ(amd::family_name(90402, false), "AI");
  EXPECT_EQ(amd::family_name(90400, true), "AI");  // MI300A is still AI
  EXPECT_EQ(amd::family_name(90100, true), "RV");
  EXPECT_EQ(amd::family_name(100300, false), "NV");
  EXPECT_EQ(amd::family_name(100301, true), "VGH");
  EXPECT_EQ(amd::family_name(110000, false), "GC_11_0_0");
  EXPECT_EQ(amd::family_name(80003, false), "VI");
  EXPECT_EQ(amd::family_name(50000, false), "");
}

TEST(AmdInfo, PciAddressFromKfdLocation) {
  EXPECT_EQ(amd::pci_address(0, 768), "0000:03:00.0");
  EXPECT_EQ(amd::pci_address(1, (0xc1 << 8) | (2 << 3) | 1), "0001:c1:02.1");
}

TEST(AmdInfo, VramLabelRoundsToGiB) {
  EXPECT_EQ(amd::vram_label(68702699520ull), "64G");
  EXPECT_EQ(amd::vram_label(206158430208ull), "192G");
  EXPECT_EQ(amd::vram_label(17163091968ull), "16G");
}

TEST(FsUtil, JoinAndParse) {
  EXPECT_EQ(sysfs::join("/", "/dev/kfd"), "/dev/kfd");
  EXPECT_EQ(sysfs::join("/tmp/fx/", "/dev/kfd"), "/tmp/fx/dev/kfd");
  EXPECT_EQ(sysfs::parse_u64("0x740f", 0), 0x740fu);
  EXPECT_EQ(sysfs::parse_u64("12", 0), 12u);
  EXPECT_FALSE(sysfs::parse_u64("12a").has_value());
  EXPECT_FALSE(sysfs::parse_u64("").has_value());
  EXPECT_FALSE(sysfs::parse_numa("-1").has_value());
  EXPECT_EQ(sysfs::parse_numa("1"), 1);
  EXPECT_TRUE(sysfs::is_pci_address("0000:c1:00.0"));
  EXPECT_FALSE(sysfs::is_pci_address("bind"));
  EXPECT_FALSE(sysfs::is_pci_address("0000:c1:00:0"));
}

}  // namespace
}  // namespace kgpu
