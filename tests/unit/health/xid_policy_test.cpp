#include "config/xid_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace kgpu {
namespace {

using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

TEST(XidPolicy, DefaultsIgnoreApplicationXidsAndSeparateFatalFromRecoverable) {
  HealthConfig c;
  for (uint64_t x : {13, 31, 43, 45, 68, 109}) EXPECT_EQ(xid_action(c, x), XidAction::Ignore) << x;
  for (uint64_t x : {48, 79, 94, 95}) EXPECT_EQ(xid_action(c, x), XidAction::MarkUnhealthyUntilReset) << x;
  EXPECT_EQ(xid_action(c, 74), XidAction::MarkUnhealthy);
  EXPECT_EQ(xid_action(c, 12345), XidAction::MarkUnhealthy);
  EXPECT_EQ(ecc_double_bit_action(c), XidAction::MarkUnhealthyUntilReset);
}

TEST(XidPolicy, ExplicitActionsWinOverTheIgnoreList) {
  HealthConfig c;
  c.xid_actions[13] = XidAction::MarkUnhealthy;
  c.xid_actions[79] = XidAction::Ignore;
  EXPECT_EQ(xid_action(c, 13), XidAction::MarkUnhealthy);
  EXPECT_EQ(xid_action(c, 79), XidAction::Ignore);
}

TEST(XidPolicy, MeaningsForLogLines) {
  EXPECT_EQ(describe_xid(79), "XID 79 (GPU has fallen off the bus)");
  EXPECT_EQ(xid_meaning(48), "double-bit ECC error");
  EXPECT_EQ(xid_meaning(999999), "unknown XID");
  EXPECT_STREQ(to_string(XidAction::MarkUnhealthyUntilReset), "mark-unhealthy-until-reset");
}

TEST(HealthEnv, UnsetChangesNothing) {
  auto r = apply_health_env(HealthConfig{}, std::nullopt, std::nullopt);
  EXPECT_EQ(r.config, HealthConfig{});
  EXPECT_TRUE(r.warnings.empty());
}

TEST(HealthEnv, DisableAllTurnsEverythingOffEvenWithEnable) {
  auto r = apply_health_env(HealthConfig{}, "ALL", "48,all");
  EXPECT_FALSE(r.config.enabled);
  EXPECT_EQ(xid_action(r.config, 48), XidAction::Ignore);
  EXPECT_EQ(ecc_double_bit_action(r.config), XidAction::Ignore);
}

TEST(HealthEnv, DisableXidsStopsXidsButNotEcc) {
  HealthConfig base;
  base.xid_actions[31] = XidAction::MarkUnhealthy;  // a config-file action the env overrides
  auto r = apply_health_env(base, "xids", std::nullopt);
  EXPECT_TRUE(r.config.enabled);
  EXPECT_FALSE(r.config.xids_enabled);
  EXPECT_EQ(xid_action(r.config, 79), XidAction::Ignore);
  EXPECT_EQ(xid_action(r.config, 31), XidAction::Ignore);
  EXPECT_EQ(ecc_double_bit_action(r.config), XidAction::MarkUnhealthyUntilReset);
}

TEST(HealthEnv, DisableListAddsIgnoredXidsAndWarnsAboutBadEntries) {
  auto r = apply_health_env(HealthConfig{}, " 74, 79 ,bogus,,", std::nullopt);
  EXPECT_EQ(xid_action(r.config, 74), XidAction::Ignore);
  EXPECT_EQ(xid_action(r.config, 79), XidAction::Ignore);
  EXPECT_EQ(xid_action(r.config, 13), XidAction::Ignore);  // defaults stay
  EXPECT_EQ(xid_action(r.config, 48), XidAction::MarkUnhealthyUntilReset);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], HasSubstr("DP_DISABLE_HEALTHCHECKS: 'bogus'"));
}

TEST(HealthEnv, EnableListRemovesXidsFromTheIgnoreListIncludingDefaults) {
  auto r = apply_health_env(HealthConfig{}, "74", "13,74");
  EXPECT_EQ(xid_action(r.config, 13), XidAction::MarkUnhealthy);
  EXPECT_EQ(xid_action(r.config, 74), XidAction::MarkUnhealthy);
  EXPECT_EQ(xid_action(r.config, 31), XidAction::Ignore);
  EXPECT_THAT(r.config.ignored_xids, UnorderedElementsAre(31, 43, 45, 68, 109));
}

TEST(HealthEnv, EnableAllCountsEveryXid) {
  auto r = apply_health_env(HealthConfig{}, std::nullopt, "all");
  for (uint64_t x : {13, 31, 43, 45, 68, 109}) EXPECT_NE(xid_action(r.config, x), XidAction::Ignore) << x;
}

TEST(HealthEnv, EnableListAfterDisableXidsCountsOnlyThoseXids) {
  auto r = apply_health_env(HealthConfig{}, "xids", "79, 13");
  EXPECT_EQ(xid_action(r.config, 79), XidAction::MarkUnhealthyUntilReset);
  EXPECT_EQ(xid_action(r.config, 13), XidAction::MarkUnhealthy);
  EXPECT_EQ(xid_action(r.config, 48), XidAction::Ignore);
  EXPECT_EQ(xid_action(r.config, 74), XidAction::Ignore);
}

TEST(HealthEnv, EnableWarnsAboutBadEntries) {
  auto r = apply_health_env(HealthConfig{}, std::nullopt, "13,x1");
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_THAT(r.warnings[0], HasSubstr("DP_ENABLE_HEALTHCHECKS: 'x1'"));
  EXPECT_EQ(xid_action(r.config, 13), XidAction::MarkUnhealthy);
}

}  // namespace
}  // namespace kgpu
