#include "kube/node_object.h"

#include <gtest/gtest.h>

namespace kgpu::kube {
namespace {

TEST(ParseNode, ReadsLabelsAndResourceVersion) {
  auto node = parse_node(R"({"kind":"Node","apiVersion":"v1","metadata":{"name":"n1","resourceVersion":"42",
    "labels":{"nvidia.com/device-plugin.config":"a100-mig","kubernetes.io/os":"linux"}}})");
  ASSERT_TRUE(node.ok()) << node.error().message;
  EXPECT_EQ(node->resource_version, "42");
  EXPECT_EQ(node->labels.at("nvidia.com/device-plugin.config"), "a100-mig");
  EXPECT_EQ(node->labels.size(), 2u);
}

TEST(ParseNode, NodeWithoutLabelsHasNone) {
  auto node = parse_node(R"({"kind":"Node","metadata":{"name":"n1","resourceVersion":"7"}})");
  ASSERT_TRUE(node.ok());
  EXPECT_TRUE(node->labels.empty());
}

TEST(ParseNode, RejectsWhatIsNotANode) {
  EXPECT_FALSE(parse_node("not json").ok());
  auto status = parse_node(R"({"kind":"Status","code":403,"message":"forbidden"})");
  ASSERT_FALSE(status.ok());
  EXPECT_NE(status.error().message.find("Status"), std::string::npos) << status.error().message;
}

TEST(ParseWatchEvent, ModifiedCarriesTheNode) {
  auto e = parse_watch_event(
      R"({"type":"MODIFIED","object":{"kind":"Node","metadata":{"resourceVersion":"9","labels":{"a":"b"}}}})");
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->type, "MODIFIED");
  EXPECT_EQ(e->node.resource_version, "9");
  EXPECT_EQ(e->node.labels.at("a"), "b");
}

TEST(ParseWatchEvent, ErrorAndBookmark) {
  auto gone = parse_watch_event(R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})");
  ASSERT_TRUE(gone.ok());
  EXPECT_EQ(gone->type, "ERROR");
  EXPECT_EQ(gone->error_code, 410);
  auto mark = parse_watch_event(R"({"type":"BOOKMARK","object":{"kind":"Node","metadata":{"resourceVersion":"77"}}})");
  ASSERT_TRUE(mark.ok());
  EXPECT_EQ(mark->node.resource_version, "77");
  EXPECT_FALSE(parse_watch_event(R"({"object":{}})").ok());
}

// Regression (issue 13 item 3): fields of the wrong type threw nlohmann::type_error out of value(),
// which killed start-up or the watch thread. Each is now an error value naming the field.
TEST(ParseNode, FieldsOfTheWrongTypeAreErrorsNotExceptions) {
  auto kind = parse_node(R"({"kind":5,"metadata":{}})");
  ASSERT_FALSE(kind.ok());
  EXPECT_NE(kind.error().message.find("kind"), std::string::npos) << kind.error().message;
  auto version = parse_node(R"({"kind":"Node","metadata":{"resourceVersion":42}})");
  ASSERT_FALSE(version.ok());
  EXPECT_NE(version.error().message.find("resourceVersion"), std::string::npos) << version.error().message;
  auto label = parse_node(R"({"kind":"Node","metadata":{"labels":{"nvidia.com/device-plugin.config":7}}})");
  ASSERT_FALSE(label.ok());
  EXPECT_NE(label.error().message.find("nvidia.com/device-plugin.config"), std::string::npos) << label.error().message;
  EXPECT_FALSE(parse_node(R"({"kind":"Node","metadata":"x"})").ok());
  EXPECT_FALSE(parse_node(R"({"kind":"Node","metadata":{"labels":[1]}})").ok());
  EXPECT_FALSE(parse_node("[1,2]").ok());
  EXPECT_FALSE(parse_node("").ok());
  EXPECT_FALSE(parse_node("\xff\xfe").ok());
}

TEST(ParseWatchEvent, FieldsOfTheWrongTypeAreErrorsNotExceptions) {
  auto code = parse_watch_event(R"({"type":"ERROR","object":{"kind":"Status","code":"x"}})");
  ASSERT_FALSE(code.ok());
  EXPECT_NE(code.error().message.find("code"), std::string::npos) << code.error().message;
  EXPECT_FALSE(parse_watch_event(R"({"type":"ERROR","object":{"code":1e300}})").ok());
  EXPECT_FALSE(parse_watch_event(R"({"type":"ERROR","object":{"code":99999999999}})").ok());
  EXPECT_FALSE(parse_watch_event(R"({"type":5,"object":{}})").ok());
  EXPECT_FALSE(parse_watch_event(R"({"type":"MODIFIED","object":{"kind":5}})").ok());
  EXPECT_FALSE(parse_watch_event(R"({"type":"MODIFIED","object":{"kind":"Node","metadata":{"labels":{"a":true}}}})").ok());
  EXPECT_FALSE(parse_watch_event(R"({"type":"BOOKMARK","object":{"metadata":{"resourceVersion":{}}}})").ok());
  EXPECT_FALSE(parse_watch_event(R"("just a string")").ok());
  auto no_code = parse_watch_event(R"({"type":"ERROR","object":"gone"})");
  ASSERT_TRUE(no_code.ok());
  EXPECT_EQ(no_code->error_code, 0);
}

}  // namespace
}  // namespace kgpu::kube
