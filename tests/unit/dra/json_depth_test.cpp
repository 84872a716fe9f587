// Issue 28, item 2: every JSON document the DRA side reads from outside (the ResourceClaim and its
// opaque parameters, the checkpoint, the MPS request files) is refused past 64 levels of nesting,
// before anything is built: nested 70,000 deep, nlohmann's recursive copies overflowed the stack.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "core/json_depth.h"
#include "dra/claims/claim_checkpoint.h"
#include "dra/model/claim.h"
#include "mps/claim_request.h"
#include "unit/dra/claim_test_support.h"

namespace kgpu::dra {
namespace {

using nlohmann::json;

std::string nested(size_t depth, const std::string& inner = "1") {
  return std::string(depth, '[') + inner + std::string(depth, ']');
}

// A valid, allocated claim whose opaque parameters hold `depth` nested arrays under "deep".
std::string claim_with_parameters_nested(size_t depth) {
  json j = testing::claim_json("uid-1", {{"gpu", "gpu-0"}},
                               json::array({testing::opaque_config({{"deep", "@"}}, {"gpu"}, "FromClaim")}));
  std::string text = j.dump();
  const auto at = text.find("\"@\"");
  EXPECT_NE(at, std::string::npos);
  return text.replace(at, 3, nested(depth));
}

bool says_too_deep(const Error& e) { return e.message.find("deeper than 64 levels") != std::string::npos; }

TEST(DraJsonDepth, ClaimWithOpaqueParametersNested70000DeepIsRefused) {
  auto claim = parse_resource_claim(claim_with_parameters_nested(70'000));
  ASSERT_FALSE(claim.ok());
  EXPECT_TRUE(says_too_deep(claim.error())) << claim.error().message;
  EXPECT_NE(claim.error().message.find("ResourceClaim"), std::string::npos) << claim.error().message;
}

TEST(DraJsonDepth, TheLimitIsExactlySixtyFourLevels) {
  // The claim itself nests 7 deep down to the parameters' value ({ status allocation devices
  // config [ { opaque parameters {): the parameters' value may add the rest.
  const size_t base = json_nesting_depth(claim_with_parameters_nested(0), 1000);
  ASSERT_GT(base, 3u);
  auto at_limit = parse_resource_claim(claim_with_parameters_nested(kMaxJsonDepth - base));
  EXPECT_TRUE(at_limit.ok()) << at_limit.error().message;
  auto past = parse_resource_claim(claim_with_parameters_nested(kMaxJsonDepth - base + 1));
  ASSERT_FALSE(past.ok());
  EXPECT_TRUE(says_too_deep(past.error())) << past.error().message;
}

TEST(DraJsonDepth, BracketsInsideStringsDoNotCount) {
  EXPECT_EQ(json_nesting_depth(R"({"a":"[[[[{{{{\"[[[["})"), 1u);
  EXPECT_EQ(json_nesting_depth(R"([{"a\\":[1]}])"), 3u);
  EXPECT_EQ(json_nesting_depth(nested(200), 64), 65u);  // stops counting past the limit
  EXPECT_TRUE(check_json_depth(nested(64), "x").ok());
  EXPECT_FALSE(check_json_depth(nested(65), "x").ok());
}

TEST(DraJsonDepth, CheckpointNested300000DeepIsRefused) {
  Checkpoint c;
  c.boot_id = "boot";
  std::string text = checkpoint_text(c);
  const auto at = text.find("\"boot\"");
  ASSERT_NE(at, std::string::npos);
  text.replace(at, 6, nested(300'000, "\"boot\""));
  auto parsed = parse_checkpoint(text);
  ASSERT_FALSE(parsed.ok());
  EXPECT_TRUE(says_too_deep(parsed.error())) << parsed.error().message;
  EXPECT_NE(parsed.error().message.find("checkpoint"), std::string::npos);
}

TEST(DraJsonDepth, MpsRequestFileNestedDeepIsRefused) {
  auto parsed = parse_mps_claim_request(R"({"claimUID":)" + nested(20'000) + "}");  // 40 KB: under the file size limit
  ASSERT_FALSE(parsed.ok());
  EXPECT_TRUE(says_too_deep(parsed.error())) << parsed.error().message;
}

}  // namespace
}  // namespace kgpu::dra
