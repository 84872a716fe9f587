// Issue 28, item 7: a planted ResourceSlice of this node's pool with generation 2^63-1 must not make
// kgpu compute highest + 1 (signed overflow; the API server refuses it forever and the node never
// publishes): the pool is restarted instead — every listed slice deleted, then the desired ones
// created at a small generation above what this process wrote.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <set>

#include "dra/publish/slice_objects.h"
#include "dra/publish/slice_publisher_diff.h"
#include "kube/resource_slice_list.h"
#include "unit/dra/synthetic_node.h"

namespace kgpu::dra {
namespace {

using nlohmann::json;
using Kind = SliceWrite::Kind;

constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

SliceOptions options() {
  SliceOptions o;
  o.node_name = "node-1";
  o.node_uid = "0f1e2d3c-0000-4000-8000-000000000001";
  return o;
}

DriverPool pool_of(const Inventory& inv) {
  auto p = build_publication(inv, options());
  EXPECT_TRUE(p.ok()) << p.error().message;
  return p.ok() && !p->pools.empty() ? p->pools[0] : DriverPool{};
}

// `slices` as a list answer, through the real parser.
std::vector<kube::ListedSlice> listed(std::vector<json> slices) {
  json items = json::array();
  int rv = 100;
  for (auto& s : slices) {
    s["metadata"]["resourceVersion"] = std::to_string(rv++);
    items.push_back(s);
  }
  auto list = kube::parse_resource_slice_list(json{{"kind", "ResourceSliceList"}, {"items", items}}.dump());
  EXPECT_TRUE(list.ok()) << list.error().message;
  return list.ok() ? list->items : std::vector<kube::ListedSlice>{};
}

TEST(SliceGeneration, APlantedMaximalGenerationRestartsThePoolInsteadOfOverflowing) {
  auto inv = testing::a100_node(2, 0);
  const auto before = pool_of(inv);
  inv.gpus[1].health = {false, "XID 79"};
  const auto after = pool_of(inv);
  auto slices = resource_slices(before, options(), 5, SliceApi::V1);
  ASSERT_EQ(slices.size(), 1u);
  json planted = slices[0];
  planted["metadata"]["name"] = "planted";
  planted["spec"]["pool"]["generation"] = kInt64Max;
  slices.push_back(planted);

  const auto diff = diff_slices(&after, listed(slices), options(), SliceApi::V1, 5);
  EXPECT_EQ(diff.generation, 6);  // above what this process wrote, far from the ceiling
  // Deletes of every listed slice first (the planted one included), then the create.
  ASSERT_EQ(diff.writes.size(), 3u);
  EXPECT_EQ(diff.writes[0].kind, Kind::Delete);
  EXPECT_EQ(diff.writes[1].kind, Kind::Delete);
  EXPECT_EQ((std::set<std::string>{diff.writes[0].name, diff.writes[1].name}),
            (std::set<std::string>{"planted", "node-1-gpu.nvidia.com-0"}));
  EXPECT_EQ(diff.writes[2].kind, Kind::Create);
  EXPECT_EQ(diff.writes[2].name, "node-1-gpu.nvidia.com-0");
  EXPECT_EQ(json::parse(diff.writes[2].body)["spec"]["pool"]["generation"], 6);
}

TEST(SliceGeneration, AMaximalGenerationRememberedAsWrittenRestartsAtOne) {
  // The publisher remembers the listed generation when nothing had to be written: a planted one too.
  const auto pool = pool_of(testing::a100_node(2, 0));
  for (int64_t remembered : {kInt64Max, kInt64Max - 1, kMaxPoolGeneration}) {
    const auto diff = diff_slices(&pool, {}, options(), SliceApi::V1, remembered);
    EXPECT_EQ(diff.generation, 1) << remembered;
    ASSERT_EQ(diff.writes.size(), 1u);
    EXPECT_EQ(json::parse(diff.writes[0].body)["spec"]["pool"]["generation"], 1);
  }
}

TEST(SliceGeneration, BelowTheCeilingGenerationsStillGoUpByOne) {
  const auto pool = pool_of(testing::a100_node(2, 0));
  EXPECT_EQ(diff_slices(&pool, {}, options(), SliceApi::V1, kMaxPoolGeneration - 1).generation, kMaxPoolGeneration);
}

}  // namespace
}  // namespace kgpu::dra
