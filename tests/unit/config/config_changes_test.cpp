// config_line_changes: what a reload logs instead of the whole effective configuration.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/config_changes.h"

namespace kgpu {
namespace {

using ::testing::ElementsAre;

TEST(ConfigLineChanges, NothingChangedIsEmpty) {
  const std::vector<std::string> lines = {"flags.migStrategy = mixed (file)", "configFile = \"/c.yaml\" (env CONFIG_FILE)"};
  EXPECT_TRUE(config_line_changes(lines, lines).empty());
}

TEST(ConfigLineChanges, ChangedNewAndBackToDefault) {
  const std::vector<std::string> before = {"flags.migStrategy = single (file)", "flags.failOnInitError = false (file)",
                                           "configFile = \"/c.yaml\" (env CONFIG_FILE)"};
  const std::vector<std::string> after = {"flags.migStrategy = mixed (file)", "configFile = \"/c.yaml\" (env CONFIG_FILE)",
                                          "flags.plugin.deviceIDStrategy = index (file)"};
  EXPECT_THAT(config_line_changes(before, after),
              ElementsAre("flags.migStrategy = mixed (file) (was: single (file))",
                          "flags.plugin.deviceIDStrategy = index (file) (was: default)",
                          "flags.failOnInitError back to its default (was: false (file))"));
}

TEST(ConfigLineChanges, AnOriginChangeIsAChange) {
  // Same value, now from the environment instead of the file: the operator should see who wins.
  EXPECT_THAT(config_line_changes({"flags.migStrategy = mixed (file)"}, {"flags.migStrategy = mixed (env MIG_STRATEGY)"}),
              ElementsAre("flags.migStrategy = mixed (env MIG_STRATEGY) (was: mixed (file))"));
}

TEST(EffectiveConfigLines, OnlySettingsNotAtTheirDefault) {
  const LoadedConfig loaded = parse_config_text("version: v1\nflags:\n  migStrategy: mixed\n", "c.yaml", false);
  const auto lines = effective_config_lines(loaded);
  ASSERT_FALSE(lines.empty());
  bool mig = false;
  for (const auto& line : lines) {
    EXPECT_FALSE(line.ends_with("(default)")) << line;
    EXPECT_EQ(line.find("  "), std::string::npos) << "padding collapsed: " << line;
    mig |= line.starts_with("flags.migStrategy = mixed (");
  }
  EXPECT_TRUE(mig) << ::testing::PrintToString(lines);
}

}  // namespace
}  // namespace kgpu
