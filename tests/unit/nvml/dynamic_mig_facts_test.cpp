// Dynamic MIG facts (issue 42) read from the fake NVML: every GPU-instance profile of an H100 with
// its placements whatever the MIG mode, named and sized as NVIDIA's profile tables; an A100's; and a
// GPU that is not MIG-capable offering none.
#include "nvml/dynamic_mig_facts.h"

#include <gtest/gtest.h>

#include "unit/nvml/fake_fleet.h"

namespace kgpu {
namespace {

using testing::FakeNode;
using testing::fleet_path;

std::vector<dra::MigProfileFacts> read(FakeNode& node, unsigned index, uint64_t memory_bytes) {
  auto bound = MigInstances::bind(node.shared());
  EXPECT_TRUE(bound) << bound.error().message;
  if (!bound) return {};
  auto gpu = node.nvml().device_by_index(index);
  EXPECT_TRUE(gpu);
  if (!gpu) return {};
  auto profiles = read_dynamic_mig_profiles(node.nvml(), **bound, *gpu, memory_bytes);
  EXPECT_TRUE(profiles) << profiles.error().message;
  return profiles ? *profiles : std::vector<dra::MigProfileFacts>{};
}

TEST(DynamicMigFacts, AnH100sProfilesWithMigOff) {
  FakeNode node(fleet_path("hgx-h100.yaml"));
  ASSERT_TRUE(node.ready()) << node.problem();
  ASSERT_TRUE(node.nvml().init());
  const auto profiles = read(node, 0, uint64_t{81559} << 20);
  node.nvml().shutdown();
  std::vector<std::string> names;
  for (const auto& p : profiles) names.push_back(p.name);
  // 1g, 2g, 3g, 4g, 7g, then REV2's 1g.20gb; no +me.
  EXPECT_EQ(names, (std::vector<std::string>{"1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", "1g.20gb"}));
  ASSERT_EQ(profiles.size(), 6u);
  const auto& three = profiles[2];
  EXPECT_EQ(three.id, 9u);
  EXPECT_EQ(three.multiprocessors, 60u);
  EXPECT_EQ(three.copy_engines, 3u);
  EXPECT_EQ(three.decoders, 3u);
  EXPECT_EQ(three.jpeg_engines, 3u);
  EXPECT_EQ(three.memory_bytes, uint64_t{40448} << 20);
  EXPECT_EQ(three.placement_size, 4u);
  EXPECT_EQ(three.placement_starts, (std::vector<unsigned>{0, 4}));
  EXPECT_EQ(profiles[0].placement_starts, (std::vector<unsigned>{0, 1, 2, 3, 4, 5, 6}));
  EXPECT_EQ(profiles[4].ofa_engines, 1u);
  EXPECT_EQ(profiles[5].placement_size, 2u);
  // The layout NVIDIA publishes from them: the full GPU and 18 placements.
  dra::DynamicMigGpuFacts gpu{0, "GPU-x", true, profiles};
  EXPECT_EQ(dra::dynamic_mig_layout(gpu).devices.size(), 19u);
}

TEST(DynamicMigFacts, AnA100InMigModeHasItsTable) {
  FakeNode node(fleet_path("a100-mig-single.yaml"));
  ASSERT_TRUE(node.ready()) << node.problem();
  ASSERT_TRUE(node.nvml().init());
  const auto profiles = read(node, 0, uint64_t{40960} << 20);
  node.nvml().shutdown();
  ASSERT_FALSE(profiles.empty());
  EXPECT_EQ(profiles[0].name, "1g.5gb");
  EXPECT_EQ(profiles[0].multiprocessors, 14u);
  EXPECT_EQ(profiles[0].placement_starts.size(), 7u);
}

TEST(DynamicMigFacts, AGpuWithoutMigOffersNothing) {
  FakeNode node(fleet_path("pcie-l4x4-pairs.yaml"));
  ASSERT_TRUE(node.ready()) << node.problem();
  ASSERT_TRUE(node.nvml().init());
  auto bound = MigInstances::bind(node.shared());
  ASSERT_TRUE(bound) << bound.error().message;
  auto gpu = node.nvml().device_by_index(0);
  ASSERT_TRUE(gpu);
  auto profiles = read_dynamic_mig_profiles(node.nvml(), **bound, *gpu, uint64_t{23034} << 20);
  node.nvml().shutdown();
  // NVML answers NOT_SUPPORTED for every profile of a GPU without MIG: nothing to offer.
  ASSERT_TRUE(profiles) << profiles.error().message;
  EXPECT_TRUE(profiles->empty());
}

}  // namespace
}  // namespace kgpu
