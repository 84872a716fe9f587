// The pure parts of `kgpu node-capacity` (issue 30, item 12): extended resource names and
// quantities as the API server accepts them, JSON Pointer escaping and the JSON Patch bodies.
#include "kube/node_capacity.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

namespace kgpu::kube {
namespace {

std::string name_problem(const std::string& name) {
  auto checked = check_extended_resource_name(name);
  return checked ? "" : checked.error().message;
}

std::string quantity_problem(const std::string& quantity) {
  auto checked = check_extended_resource_quantity(quantity);
  return checked ? "" : checked.error().message;
}

TEST(NodeCapacity, AcceptsDomainPrefixedNames) {
  for (const char* name : {"example.com/dongle", "example.com/foo", "licences.acme.io/matlab_R2024.b",
                           "a/b", "x-y.z/Ab-9"})
    EXPECT_EQ(name_problem(name), "") << name;
}

TEST(NodeCapacity, RefusesNamesTheApiServerRefuses) {
  EXPECT_NE(name_problem("dongle").find("needs a domain prefix"), std::string::npos);
  EXPECT_NE(name_problem("kubernetes.io/dongle").find("reserved"), std::string::npos);
  EXPECT_NE(name_problem("node.kubernetes.io/dongle").find("reserved"), std::string::npos);
  EXPECT_NE(name_problem("requests.example.com/dongle").find("requests."), std::string::npos);
  EXPECT_NE(name_problem("Example.com/dongle").find("'E'"), std::string::npos);
  EXPECT_NE(name_problem("example..com/dongle").find("empty part"), std::string::npos);
  EXPECT_NE(name_problem("-example.com/dongle").find("starts or ends with '-'"), std::string::npos);
  EXPECT_NE(name_problem("/dongle").find("is empty"), std::string::npos);
  EXPECT_NE(name_problem("example.com/").find("after '/' is empty"), std::string::npos);
  EXPECT_NE(name_problem("example.com/a/b").find("holds '/'"), std::string::npos);
  EXPECT_NE(name_problem("example.com/a~b").find("holds '~'"), std::string::npos);
  EXPECT_NE(name_problem("example.com/-a").find("start and end"), std::string::npos);
  EXPECT_NE(name_problem("example.com/" + std::string(64, 'a')).find("longer than 63"), std::string::npos);
  EXPECT_NE(name_problem(std::string(64, 'a') + ".com/x").find("longer than 63"), std::string::npos);
  // "requests." + the domain must still be a subdomain of at most 253 characters.
  std::string long_domain;
  while (long_domain.size() < 250) long_domain += std::string(40, 'a') + ".";
  long_domain.resize(249);
  long_domain += "b";
  EXPECT_EQ(long_domain.size(), 250u);
  EXPECT_NE(name_problem(long_domain + "/x").find("too long"), std::string::npos);
}

TEST(NodeCapacity, QuantitiesAreWholeNonNegativeNumbers) {
  for (const char* q : {"0", "4", "1000", "2k", "1Ki", "3Mi", "9223372036854775807", "8E", "7Ei"})
    EXPECT_EQ(quantity_problem(q), "") << q;
  EXPECT_EQ(*check_extended_resource_quantity("2k"), "2k");
  EXPECT_NE(quantity_problem("").find("not a number"), std::string::npos);
  EXPECT_NE(quantity_problem("-1").find("not a number"), std::string::npos);
  EXPECT_NE(quantity_problem("+1").find("not a number"), std::string::npos);
  EXPECT_NE(quantity_problem("four").find("not a number"), std::string::npos);
  EXPECT_NE(quantity_problem("1.5").find("not whole"), std::string::npos);
  EXPECT_NE(quantity_problem("500m").find("thousandths"), std::string::npos);
  EXPECT_NE(quantity_problem("4x").find("unknown suffix \"x\""), std::string::npos);
  EXPECT_NE(quantity_problem("4 ").find("unknown suffix"), std::string::npos);
  EXPECT_NE(quantity_problem("9223372036854775808").find("too large"), std::string::npos);
  EXPECT_NE(quantity_problem("10E").find("too large"), std::string::npos);
  EXPECT_NE(quantity_problem("8Ei").find("too large"), std::string::npos);
}

TEST(NodeCapacity, NodeNamesAreSubdomains) {
  EXPECT_TRUE(check_node_name("gpu-node-1.example.com"));
  EXPECT_FALSE(check_node_name(""));
  EXPECT_FALSE(check_node_name("node/status"));
  EXPECT_FALSE(check_node_name("node?x=1"));
  EXPECT_FALSE(check_node_name("Node1"));
}

TEST(NodeCapacity, EscapesJsonPointerTokens) {
  EXPECT_EQ(escape_json_pointer("example.com/dongle"), "example.com~1dongle");
  EXPECT_EQ(escape_json_pointer("a~b"), "a~0b");
  EXPECT_EQ(escape_json_pointer("~/"), "~0~1");  // '~' first, so "/" never becomes "~01"
  EXPECT_EQ(escape_json_pointer("plain"), "plain");
}

TEST(NodeCapacity, PatchBodiesAreTheDocsJsonPatch) {
  auto add = nlohmann::json::parse(capacity_add_patch("example.com/dongle", "4"));
  EXPECT_EQ(add, nlohmann::json::parse(
                     R"([{"op":"add","path":"/status/capacity/example.com~1dongle","value":"4"}])"));
  auto remove = nlohmann::json::parse(capacity_remove_patch("example.com/dongle"));
  EXPECT_EQ(remove, nlohmann::json::parse(R"([{"op":"remove","path":"/status/capacity/example.com~1dongle"}])"));
}

TEST(NodeCapacity, ParsesNameEqualsQuantity) {
  auto setting = parse_capacity_setting("example.com/dongle=4");
  ASSERT_TRUE(setting) << setting.error().message;
  EXPECT_EQ(setting->name, "example.com/dongle");
  EXPECT_EQ(setting->quantity, "4");
  auto no_eq = parse_capacity_setting("example.com/dongle");
  ASSERT_FALSE(no_eq);
  EXPECT_NE(no_eq.error().message.find("not NAME=QTY"), std::string::npos);
  EXPECT_FALSE(parse_capacity_setting("dongle=4"));
  auto bad_qty = parse_capacity_setting("example.com/dongle=four");
  ASSERT_FALSE(bad_qty);
  EXPECT_NE(bad_qty.error().message.find("\"four\""), std::string::npos);
}

}  // namespace
}  // namespace kgpu::kube
