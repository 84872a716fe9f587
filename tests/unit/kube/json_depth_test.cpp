// Issue 28, item 2: an API server answer nested deeper than 64 levels (a ResourceSlice of another
// node or driver nested 70,000 deep, in a list or a watch event; a Node) is refused with an error
// saying so, before nlohmann builds a value a later copy would overflow the stack with.
#include <gtest/gtest.h>

#include <string>

#include "core/json_depth.h"
#include "kube/node_object.h"
#include "kube/resource_slice_list.h"

namespace kgpu::kube {
namespace {

std::string nested(size_t depth) { return std::string(depth, '[') + std::string(depth, ']'); }

std::string slice(const std::string& devices) {
  return R"({"metadata":{"name":"other-node-gpu","resourceVersion":"5"},"spec":{"driver":"other.example.com",)"
         R"("nodeName":"other","pool":{"name":"other","generation":1,"resourceSliceCount":1},"devices":)" +
         devices + "}}";
}

void expect_too_deep(const Error& e) {
  EXPECT_NE(e.message.find("deeper than 64 levels"), std::string::npos) << e.message;
}

TEST(KubeJsonDepth, ASliceListNested70000DeepIsRefused) {
  const std::string good = R"({"kind":"ResourceSliceList","items":[)" + slice("[]") + "]}";
  ASSERT_TRUE(parse_resource_slice_list(good).ok());
  auto list = parse_resource_slice_list(R"({"kind":"ResourceSliceList","items":[)" + slice(nested(70'000)) + "]}");
  ASSERT_FALSE(list.ok());
  expect_too_deep(list.error());
}

TEST(KubeJsonDepth, ASliceWatchEventNestedDeepIsRefusedAndTheNextLineStillParses) {
  auto deep = parse_slice_watch_event(R"({"type":"ADDED","object":)" + slice(nested(70'000)) + "}");
  ASSERT_FALSE(deep.ok());
  expect_too_deep(deep.error());
  auto next = parse_slice_watch_event(R"({"type":"MODIFIED","object":)" + slice("[]") + "}");
  ASSERT_TRUE(next.ok()) << next.error().message;
  EXPECT_EQ(next->driver, "other.example.com");
}

TEST(KubeJsonDepth, NodeAnswersAndDiscoveryNestedDeepAreRefused) {
  const std::string labels = R"({"kind":"Node","metadata":{"name":"n","resourceVersion":"1","x":)" + nested(70'000) + "}}";
  auto node = parse_node(labels);
  ASSERT_FALSE(node.ok());
  expect_too_deep(node.error());
  auto event = parse_watch_event(R"({"type":"MODIFIED","object":)" + labels + "}");
  ASSERT_FALSE(event.ok());
  expect_too_deep(event.error());
  auto versions = parse_api_group_versions(R"({"versions":)" + nested(70'000) + "}");
  ASSERT_FALSE(versions.ok());
  expect_too_deep(versions.error());
}

}  // namespace
}  // namespace kgpu::kube
