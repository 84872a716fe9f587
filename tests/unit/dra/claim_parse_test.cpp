// ResourceClaim parsing (v1, v1beta2, v1beta1), the results of our driver and pool, and the
// opaque-config precedence; every bad input is an error naming the field, never an exception.
#include <gtest/gtest.h>

#include <functional>

#include "dra/model/claim.h"
#include "unit/dra/claim_test_support.h"

namespace kgpu::dra {
namespace {

using nlohmann::json;
using testing::claim_json;
using testing::opaque_config;

ResourceClaim parse(const json& j) {
  auto c = parse_resource_claim(j.dump());
  EXPECT_TRUE(c.ok()) << c.error().message;
  return c.ok() ? *c : ResourceClaim{};
}

std::string error_of(const std::string& text) {
  auto c = parse_resource_claim(text);
  EXPECT_FALSE(c.ok());
  return c.ok() ? "" : c.error().message;
}

TEST(DraClaimParse, ReadsMetadataResultsAndConfigInEveryApiVersion) {
  for (const char* version : {"resource.k8s.io/v1", "resource.k8s.io/v1beta2", "resource.k8s.io/v1beta1"}) {
    json j = claim_json("uid-1", {{"gpu", "gpu-0"}, {"gpu", "gpu-1", "other.example.com", "other-pool"}},
                        json::array({opaque_config({{"x", 1}}, {"gpu"}, "FromClass")}), version);
    j["status"]["allocation"]["devices"]["results"][0]["shareID"] = "share-1";
    j["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = true;
    j["status"]["allocation"]["devices"]["results"][0]["consumedCapacity"] = {{"memory", "10Gi"}};
    const ResourceClaim c = parse(j);
    EXPECT_EQ(c.api_version, version);
    EXPECT_EQ(c.ref, (ClaimRef{"uid-1", "team-a", "claim-uid-1"}));
    EXPECT_TRUE(c.allocated);
    ASSERT_EQ(c.results.size(), 2u);
    EXPECT_EQ(c.results[0], (AllocationResult{"gpu", "gpu.nvidia.com", "node-1", "gpu-0", true, "share-1",
                                              {{"memory", uint64_t{10} << 30}}}));
    EXPECT_EQ(c.results[1].driver, "other.example.com");
    EXPECT_FALSE(c.results[1].admin_access);
    EXPECT_FALSE(c.results[1].share_id);
    ASSERT_EQ(c.configs.size(), 1u);
    EXPECT_EQ(c.configs[0].source, OpaqueConfig::Source::FromClass);
    EXPECT_EQ(c.configs[0].requests, std::vector<std::string>{"gpu"});
    EXPECT_EQ(c.configs[0].parameters, (json{{"x", 1}}));
  }
}

TEST(DraClaimParse, UnallocatedClaimParsesButHasNothingToPrepare) {
  json j = claim_json("uid-1", {});
  j.erase("status");
  const ResourceClaim c = parse(j);
  EXPECT_FALSE(c.allocated);
  auto r = results_for(c, "gpu.nvidia.com", "node-1");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Error::Code::FailedPrecondition);
  EXPECT_NE(r.error().message.find("not allocated"), std::string::npos);
}

TEST(DraClaimParse, BadInputIsAnErrorNamingTheField) {
  const json good = claim_json("uid-1", {{"gpu", "gpu-0"}});
  struct Case {
    std::function<void(json&)> edit;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {[](json& j) { j["apiVersion"] = "resource.k8s.io/v1alpha3"; }, "apiVersion \"resource.k8s.io/v1alpha3\""},
      {[](json& j) { j["apiVersion"] = 3; }, "ResourceClaim.apiVersion must be a string, not number"},
      {[](json& j) { j["kind"] = "Pod"; }, "kind \"Pod\" is not a ResourceClaim"},
      {[](json& j) { j.erase("metadata"); }, "ResourceClaim.metadata is missing"},
      {[](json& j) { j["metadata"].erase("uid"); }, "metadata.uid is missing"},
      {[](json& j) { j["metadata"]["uid"] = ""; }, "metadata.uid is empty"},
      {[](json& j) { j["metadata"]["namespace"] = json::array(); }, "metadata.namespace must be a string, not array"},
      {[](json& j) { j["status"] = "x"; }, "ResourceClaim.status must be an object, not string"},
      {[](json& j) { j["status"]["allocation"]["devices"]["results"] = json::object(); },
       "status.allocation.devices.results must be an array, not object"},
      {[](json& j) { j["status"]["allocation"]["devices"]["results"][0] = 7; },
       "status.allocation.devices.results[0] must be an object, not number"},
      {[](json& j) { j["status"]["allocation"]["devices"]["results"][0].erase("device"); },
       "status.allocation.devices.results[0].device is missing"},
      {[](json& j) { j["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = "yes"; },
       "results[0].adminAccess must be a boolean, not string"},
      {[](json& j) { j["status"]["allocation"]["devices"]["config"] = json::array({{{"source", "Elsewhere"}}}); },
       "config[0].source must be FromClass or FromClaim, not \"Elsewhere\""},
      {[](json& j) { j["status"]["allocation"]["devices"]["config"] = json::array({{{"requests", {1}}}}); },
       "config[0].requests[0] must be a string"},
      {[](json& j) {
         j["status"]["allocation"]["devices"]["config"] = json::array({{{"opaque", {{"driver", "gpu.nvidia.com"}}}}});
       },
       "config[0].opaque.parameters is missing"},
  };
  for (const auto& c : cases) {
    json j = good;
    c.edit(j);
    const std::string message = error_of(j.dump());
    EXPECT_NE(message.find(c.expected), std::string::npos) << "got: " << message << "\nwanted: " << c.expected;
  }
  EXPECT_EQ(error_of("{\"apiVersion\":"), "ResourceClaim is not valid JSON");
  EXPECT_NE(error_of("[1,2]").find("must be a JSON object, not array"), std::string::npos);
  EXPECT_NE(error_of(std::string(kMaxClaimTextBytes + 1, ' ')).find("more than"), std::string::npos);
}

TEST(DraClaimParse, DeepNestingAndInvalidUtf8AreErrorsNotCrashes) {
  EXPECT_NE(error_of(std::string(100000, '[') + std::string(100000, ']')).find("deeper than 64 levels"),
            std::string::npos);
  EXPECT_EQ(error_of("{\"apiVersion\":\"\xff\"}"), "ResourceClaim is not valid JSON");
}

TEST(DraClaimParse, ResultsForOurDriverAndPoolOnly) {
  const ResourceClaim c = parse(claim_json(
      "uid-1", {{"a", "gpu-0"}, {"b", "nic-0", "nic.example.com", "node-1"}, {"c/sub", "gpu-1"}}));
  auto mine = results_for(c, "gpu.nvidia.com", "node-1");
  ASSERT_TRUE(mine.ok()) << mine.error().message;
  ASSERT_EQ(mine->size(), 2u);
  EXPECT_EQ((*mine)[0].device, "gpu-0");
  EXPECT_EQ((*mine)[1].base_request(), "c");

  auto none = results_for(c, "gpu.amd.com", "node-1");
  ASSERT_FALSE(none.ok());
  EXPECT_NE(none.error().message.find("has no device allocated from driver gpu.amd.com"), std::string::npos);

  const ResourceClaim elsewhere = parse(claim_json("uid-2", {{"a", "gpu-3", "gpu.nvidia.com", "node-7"}}));
  auto wrong_pool = results_for(elsewhere, "gpu.nvidia.com", "node-1");
  ASSERT_FALSE(wrong_pool.ok());
  EXPECT_NE(wrong_pool.error().message.find("\"gpu-3\""), std::string::npos);
  EXPECT_NE(wrong_pool.error().message.find("pool \"node-7\""), std::string::npos);
}

TEST(DraClaimParse, ClaimConfigsOverrideClassConfigsAndLaterEntriesWin) {
  const json configs = json::array({
      opaque_config({{"n", 1}}, {}, "FromClaim"),
      opaque_config({{"n", 2}}, {}, "FromClass"),
      opaque_config({{"n", 3}}, {"b"}, "FromClaim"),
      opaque_config({{"n", 4}}, {"a"}, "FromClaim", "other.example.com"),
  });
  const ResourceClaim c = parse(claim_json("uid-1", {{"a/x", "gpu-0"}, {"b", "gpu-1"}}, configs));
  auto params = [](const std::vector<const OpaqueConfig*>& list) {
    std::vector<int> out;
    for (const auto* config : list) out.push_back(config->parameters["n"].get<int>());
    return out;
  };
  // Class configs first (lowest), then the claim's in API order; only those naming the request or
  // none, only this driver's.
  EXPECT_EQ(params(configs_for(c, "gpu.nvidia.com", c.results[0])), (std::vector<int>{2, 1}));
  EXPECT_EQ(params(configs_for(c, "gpu.nvidia.com", c.results[1])), (std::vector<int>{2, 1, 3}));
  EXPECT_TRUE(configs_for(c, "gpu.amd.com", c.results[0]).empty());
}

}  // namespace
}  // namespace kgpu::dra
