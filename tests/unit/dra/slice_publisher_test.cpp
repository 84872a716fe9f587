// The pure half of the slice publisher: desired pool vs listed slices -> creates, updates, deletes
// and the pool generation; the ResourceSliceList / discovery parsers; the API version choice.
#include <gtest/gtest.h>

#include "dra/publish/slice_objects.h"
#include "dra/publish/slice_publisher.h"
#include "dra/publish/slice_publisher_diff.h"
#include "kube/resource_slice_list.h"
#include "unit/dra/synthetic_node.h"

namespace kgpu::dra {
namespace {

using nlohmann::json;
using Kind = SliceWrite::Kind;

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

// `slices` as the API server lists them: no apiVersion / kind per item, server metadata added, empty
// fields left out, through the real list parser.
std::vector<kube::ListedSlice> listed(std::vector<json> slices, int first_rv = 100) {
  json items = json::array();
  for (auto& s : slices) {
    s.erase("apiVersion");
    s.erase("kind");
    s["metadata"]["resourceVersion"] = std::to_string(first_rv++);
    s["metadata"]["uid"] = "u-" + s["metadata"]["name"].get<std::string>();
    s["metadata"]["managedFields"] = json::array({{{"manager", "kgpu"}}});
    s["spec"]["allNodes"] = nullptr;
    for (auto& d : s["spec"]["devices"])
      if (d.contains("capacity") && d["capacity"].empty()) d.erase("capacity");
    if (s["spec"]["devices"].empty()) s["spec"].erase("devices");
    items.push_back(s);
  }
  auto list = kube::parse_resource_slice_list(json{{"kind", "ResourceSliceList"}, {"items", items}}.dump());
  EXPECT_TRUE(list.ok()) << list.error().message;
  return list.ok() ? list->items : std::vector<kube::ListedSlice>{};
}

std::vector<Kind> kinds(const SliceDiff& diff) {
  std::vector<Kind> out;
  for (const auto& w : diff.writes) out.push_back(w.kind);
  return out;
}

TEST(SliceDiff, NothingListedCreatesTheSlicesAtGenerationOne) {
  const auto pool = pool_of(testing::a100_node(2, 0));
  const auto diff = diff_slices(&pool, {}, options(), SliceApi::V1);
  EXPECT_EQ(diff.generation, 1);
  ASSERT_EQ(kinds(diff), (std::vector<Kind>{Kind::Create}));
  EXPECT_EQ(diff.writes[0].name, "node-1-gpu.nvidia.com-0");
  EXPECT_EQ(json::parse(diff.writes[0].body), resource_slices(pool, options(), 1, SliceApi::V1)[0]);
}

TEST(SliceDiff, SameContentAsListedWritesNothing) {
  for (SliceApi api : {SliceApi::V1, SliceApi::V1beta1}) {
    const auto pool = pool_of(testing::a100_node(4, 2));
    const auto diff = diff_slices(&pool, listed(resource_slices(pool, options(), 7, api)), options(), api);
    EXPECT_TRUE(diff.writes.empty());
    EXPECT_EQ(diff.generation, 7);
  }
}

TEST(SliceDiff, HealthChangeUpdatesWithTheNextGenerationAndTheListedResourceVersion) {
  auto inv = testing::a100_node(4, 0);
  const auto before = pool_of(inv);
  inv.gpus[1].health = {false, "XID 79"};
  const auto after = pool_of(inv);
  const auto diff = diff_slices(&after, listed(resource_slices(before, options(), 3, SliceApi::V1), 41), options(),
                                SliceApi::V1);
  EXPECT_EQ(diff.generation, 4);
  ASSERT_EQ(kinds(diff), (std::vector<Kind>{Kind::Update}));
  EXPECT_EQ(diff.writes[0].resource_version, "41");
  auto body = json::parse(diff.writes[0].body);
  EXPECT_EQ(body["metadata"]["resourceVersion"], "41");
  body["metadata"].erase("resourceVersion");
  EXPECT_EQ(body, resource_slices(after, options(), 4, SliceApi::V1)[0]);
}

TEST(SliceDiff, NewGenerationExceedsEveryListedOneAndTheLastWritten) {
  auto inv = testing::a100_node(2, 0);
  const auto old_pool = pool_of(inv);
  inv.gpus[0].health = {false, "XID 48"};
  const auto pool = pool_of(inv);
  auto slices = resource_slices(old_pool, options(), 9, SliceApi::V1);
  EXPECT_EQ(diff_slices(&pool, listed(slices), options(), SliceApi::V1).generation, 10);
  EXPECT_EQ(diff_slices(&pool, listed(slices), options(), SliceApi::V1, 15).generation, 16);
  EXPECT_EQ(diff_slices(&pool, {}, options(), SliceApi::V1, 15).generation, 16);
}

TEST(SliceDiff, SlicesAtMixedGenerationsAreAllRewritten) {
  // An earlier pass wrote slice 0 at generation 5 but failed before slice 1: same content, but the
  // pool is not consistent until both carry one generation.
  const auto pool = pool_of(testing::a100_node(20, 20));  // 140 MIG devices: two slices
  auto at4 = resource_slices(pool, options(), 4, SliceApi::V1);
  auto at5 = resource_slices(pool, options(), 5, SliceApi::V1);
  ASSERT_EQ(at4.size(), 2u);
  const auto diff = diff_slices(&pool, listed({at5[0], at4[1]}), options(), SliceApi::V1);
  EXPECT_EQ(diff.generation, 6);
  EXPECT_EQ(kinds(diff), (std::vector<Kind>{Kind::Update, Kind::Update}));
}

TEST(SliceDiff, ShrinkingPoolUpdatesThenDeletesTheSliceNoLongerNeeded) {
  const auto big = pool_of(testing::a100_node(20, 20));
  const auto small = pool_of(testing::a100_node(10, 10));  // half the GPUs: one slice is enough
  const auto diff = diff_slices(&small, listed(resource_slices(big, options(), 2, SliceApi::V1)), options(),
                                SliceApi::V1);
  ASSERT_EQ(kinds(diff), (std::vector<Kind>{Kind::Update, Kind::Delete}));
  EXPECT_EQ(diff.writes[1].name, "node-1-gpu.nvidia.com-1");
  EXPECT_EQ(json::parse(diff.writes[0].body)["spec"]["pool"]["resourceSliceCount"], 1);
  EXPECT_EQ(diff.generation, 3);
}

TEST(SliceDiff, ForeignSlicesOfTheNodeAndDriverAreDeleted) {
  const auto pool = pool_of(testing::a100_node(1, 0));
  auto slices = resource_slices(pool, options(), 1, SliceApi::V1);
  auto stray = slices[0];
  stray["metadata"]["name"] = "node-1-gpu.nvidia.com-abcde";  // e.g. a generateName slice
  const auto diff = diff_slices(&pool, listed({slices[0], stray}), options(), SliceApi::V1);
  ASSERT_EQ(kinds(diff), (std::vector<Kind>{Kind::Update, Kind::Delete}));
  EXPECT_EQ(diff.writes[1].name, "node-1-gpu.nvidia.com-abcde");
  EXPECT_EQ(diff.generation, 2);
}

TEST(SliceDiff, ListedSliceWithAnotherPoolNameIsDeletedBeforeItsNameIsCreatedAgain) {
  const auto pool = pool_of(testing::a100_node(1, 0));
  auto slices = resource_slices(pool, options(), 1, SliceApi::V1);
  slices[0]["spec"]["pool"]["name"] = "old-pool";  // pool.name is immutable: no update can fix it
  const auto diff = diff_slices(&pool, listed(slices), options(), SliceApi::V1);
  ASSERT_EQ(kinds(diff), (std::vector<Kind>{Kind::Delete, Kind::Create}));
  EXPECT_EQ(diff.writes[0].name, diff.writes[1].name);
}

TEST(SliceDiff, OwnerReferenceChangeIsAChange) {
  const auto pool = pool_of(testing::a100_node(1, 0));
  auto slices = resource_slices(pool, options(), 1, SliceApi::V1);
  slices[0]["metadata"]["ownerReferences"][0]["uid"] = "uid-of-a-node-deleted-and-recreated";
  EXPECT_EQ(kinds(diff_slices(&pool, listed(slices), options(), SliceApi::V1)), (std::vector<Kind>{Kind::Update}));
}

TEST(SliceDiff, NoPoolDeletesEveryListedSlice) {
  const auto pool = pool_of(testing::a100_node(20, 20));
  const auto diff = diff_slices(nullptr, listed(resource_slices(pool, options(), 6, SliceApi::V1)), options(),
                                SliceApi::V1);
  EXPECT_EQ(kinds(diff), (std::vector<Kind>{Kind::Delete, Kind::Delete}));
  EXPECT_TRUE(diff_slices(nullptr, {}, options(), SliceApi::V1).writes.empty());
}

TEST(SliceDiff, EmptyPoolIsStillOneSlice) {
  auto inv = testing::a100_node(1, 0);
  inv.gpus[0].health = {false, "XID 48"};
  const auto pool = with_taint_support(pool_of(inv), TaintSupport::Off);  // a server without taints
  ASSERT_TRUE(pool.devices.empty());
  const auto diff = diff_slices(&pool, {}, options(), SliceApi::V1);
  ASSERT_EQ(kinds(diff), (std::vector<Kind>{Kind::Create}));
  // Listed back (the server leaves the empty device list out): unchanged.
  EXPECT_TRUE(diff_slices(&pool, listed(resource_slices(pool, options(), 1, SliceApi::V1)), options(), SliceApi::V1)
                  .writes.empty());
}

TEST(SliceDiff, NamesFollowTheBuilder) {
  const auto pool = pool_of(testing::a100_node(20, 20));
  const auto slices = resource_slices(pool, options(), 1, SliceApi::V1);
  for (size_t k = 0; k < slices.size(); ++k)
    EXPECT_EQ(slices[k]["metadata"]["name"], slice_name(options(), pool.driver, k));
}

TEST(SliceDiff, ResourceVersionGoesIntoTheMetadata) {
  const auto pool = pool_of(testing::a100_node(1, 0));
  const auto text = resource_slice_texts(pool, options(), 1, SliceApi::V1)[0];
  auto body = json::parse(with_resource_version(text, "12\"3"));
  EXPECT_EQ(body["metadata"]["resourceVersion"], "12\"3");
  EXPECT_EQ(body["metadata"]["name"], "node-1-gpu.nvidia.com-0");
}

TEST(SliceList, ParsesItemsAndTheContinueToken) {
  auto list = kube::parse_resource_slice_list(R"({"kind":"ResourceSliceList","metadata":{"continue":"abc"},
    "items":[{"metadata":{"name":"s","resourceVersion":"5"},
              "spec":{"driver":"gpu.nvidia.com","nodeName":"n","pool":{"name":"n","generation":3,"resourceSliceCount":1}}}]})");
  ASSERT_TRUE(list.ok()) << list.error().message;
  EXPECT_EQ(list->continue_token, "abc");
  ASSERT_EQ(list->items.size(), 1u);
  EXPECT_EQ(list->items[0].name, "s");
  EXPECT_EQ(list->items[0].resource_version, "5");
  EXPECT_EQ(list->items[0].generation, 3);
  EXPECT_TRUE(list->items[0].owner_references.is_null());
  auto empty = kube::parse_resource_slice_list(R"({"kind":"ResourceSliceList","metadata":{}})");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->items.empty());
}

TEST(SliceList, WrongTypesAreErrorsForTheWholeList) {
  for (const char* text : {
           "<html>", "[]", R"({"kind":"NodeList","items":[]})", R"({"items":{}})",
           R"({"items":[{"metadata":{"name":"s"},"spec":{"driver":"d","pool":{"name":"p","generation":"3"}}}]})",
           R"({"items":[{"metadata":{"name":5},"spec":{"driver":"d","pool":{"name":"p"}}}]})",
           R"({"items":[{"metadata":{"name":"s"},"spec":{"driver":"d"}}]})",
           R"({"items":[{"metadata":{"name":"s"},"spec":{"driver":"d","pool":{"name":"p","generation":1e3}}}]})",
           R"({"items":[{"metadata":{"name":"s","ownerReferences":{}},"spec":{"driver":"d","pool":{"name":"p"}}}]})",
           R"({"items":[{"metadata":{"name":"s"},"spec":{"driver":"d","pool":{"name":"p","generation":18446744073709551615}}}]})",
       }) {
    EXPECT_FALSE(kube::parse_resource_slice_list(text).ok()) << text;
  }
}

TEST(SliceApiChoice, PrefersV1ThenV1beta1) {
  auto versions = kube::parse_api_group_versions(
      R"({"kind":"APIGroup","name":"resource.k8s.io","versions":[{"groupVersion":"resource.k8s.io/v1beta1","version":"v1beta1"},{"groupVersion":"resource.k8s.io/v1","version":"v1"}]})");
  ASSERT_TRUE(versions.ok()) << versions.error().message;
  EXPECT_EQ(*choose_slice_api(*versions), SliceApi::V1);
  EXPECT_EQ(*choose_slice_api({"v1beta2", "v1beta1"}), SliceApi::V1beta1);
  auto none = choose_slice_api({"v1beta2"});
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("v1beta2"), std::string::npos) << none.error().message;
  EXPECT_FALSE(kube::parse_api_group_versions(R"({"versions":[{"version":1}]})").ok());
  EXPECT_FALSE(kube::parse_api_group_versions("{}").ok());
}

}  // namespace
}  // namespace kgpu::dra
