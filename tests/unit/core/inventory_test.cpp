#include "core/inventory.h"

#include <gtest/gtest.h>

#include "core/resource_plan.h"
#include "core/result.h"

namespace kgpu {
namespace {

Inventory two_gpus(const std::string& prefix) {
  Inventory inv;
  inv.driver_version = "550.54.15";
  for (int i = 0; i < 2; ++i) {
    Gpu g;
    g.index = i;
    g.uuid = prefix + std::to_string(i);
    inv.gpus.push_back(g);
  }
  inv.topology.links.assign(2, std::vector<GpuLink>(2));
  inv.topology.links[0][1].nvlinks = inv.topology.links[1][0].nvlinks = 12;
  return inv;
}

TEST(Inventory, MergeConcatenatesGpusAndOffsetsTopology) {
  Inventory merged = merge({two_gpus("GPU-a"), two_gpus("GPU-b")});
  ASSERT_EQ(merged.gpus.size(), 4u);
  EXPECT_EQ(merged.gpus[2].uuid, "GPU-b0");
  EXPECT_EQ(merged.topology.link(0, 1).nvlinks, 12);
  EXPECT_EQ(merged.topology.link(2, 3).nvlinks, 12);
  EXPECT_EQ(merged.topology.link(1, 2).nvlinks, 0);  // different backends are never linked
  EXPECT_EQ(merged.driver_version, "550.54.15");
}

TEST(Inventory, MergeOfNothingIsEmpty) {
  Inventory merged = merge({});
  EXPECT_TRUE(merged.gpus.empty());
  EXPECT_TRUE(merged.topology.empty());
}

TEST(Inventory, FindByUuid) {
  Inventory inv = two_gpus("GPU-x");
  ASSERT_NE(inv.find_by_uuid("GPU-x1"), nullptr);
  EXPECT_EQ(inv.find_by_uuid("GPU-x1")->index, 1);
  EXPECT_EQ(inv.find_by_uuid("GPU-nope"), nullptr);
}

TEST(Result, CarriesValueOrError) {
  Result<int> good = 3;
  Result<int> bad = Error::invalid("no");
  ASSERT_TRUE(good.ok());
  EXPECT_EQ(*good, 3);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Error::Code::InvalidArgument);
  EXPECT_EQ(bad.error().message, "no");
}

}  // namespace
}  // namespace kgpu
