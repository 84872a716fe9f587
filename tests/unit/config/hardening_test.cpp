// Issue 13: config input that once crashed the daemon or cost quadratic time, and the replica bound.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/loader.h"

namespace kgpu {
namespace {

using ::testing::HasSubstr;

LoadedConfig parse(const std::string& text) { return parse_config_text(text, "c.yaml", false); }

bool has_error(const LoadedConfig& loaded) {
  for (const auto& d : loaded.diagnostics)
    if (d.severity == Diagnostic::Severity::Error) return true;
  return false;
}

// `deviceGroups: [{[a]: 1}]` threw YAML::TypedBadConversion out of the parser: std::terminate.
TEST(ConfigHardening, DeviceGroupKeyThatIsNotTextIsAnErrorWithItsPosition) {
  const auto loaded = parse("version: v1\nkgpu:\n  deviceGroups:\n    - {[a]: 1}\n");
  ASSERT_TRUE(has_error(loaded));
  const std::string text = format_diagnostics(loaded.diagnostics);
  EXPECT_THAT(text, HasSubstr("must be text"));
  EXPECT_THAT(text, HasSubstr("line 4, column 8"));
  EXPECT_TRUE(loaded.config.device_groups.empty());
}

TEST(ConfigHardening, DeviceGroupEnvNameThatIsNotTextIsAnError) {
  const auto loaded = parse("kgpu:\n  deviceGroups:\n    - resource: a.com/b\n      devices: [/dev/x]\n"
                            "      env: {{k: v}: 1}\n");
  ASSERT_TRUE(has_error(loaded));
  EXPECT_THAT(format_diagnostics(loaded.diagnostics), HasSubstr("a key in env must be text"));
}

// Every mapping the parser walks: a list or a map where a key belongs is an error at that key,
// never a crash and never silently read as "" (which used to be only an unknown-key warning).
TEST(ConfigHardening, NonTextKeysAnywhereAreErrors) {
  const std::vector<std::string> documents = {
      "? [a]\n: 1\n",
      "flags:\n  ? {a: 1}\n  : x\n",
      "flags:\n  plugin:\n    ? [x]\n    : y\n",
      "kgpu:\n  ? [x]\n  : y\n",
      "kgpu:\n  health:\n    xidActions:\n      ? [79]\n      : ignore\n",
      "resources:\n  ? [gpus]\n  : []\n",
      "resources:\n  gpus:\n    - {[pattern]: x, name: y}\n",
      "sharing:\n  ? [timeSlicing]\n  : {}\n",
      "sharing:\n  timeSlicing:\n    ? [renameByDefault]\n    : true\n",
      "sharing:\n  timeSlicing:\n    resources:\n      - {name: gpu, replicas: 2, [devices]: all}\n",
      "imex:\n  ? [required]\n  : true\n",
  };
  for (const auto& doc : documents) {
    SCOPED_TRACE(doc);
    const auto loaded = parse(doc);
    ASSERT_TRUE(has_error(loaded)) << format_diagnostics(loaded.diagnostics);
    EXPECT_THAT(format_diagnostics(loaded.diagnostics), HasSubstr("must be text"));
  }
}

// `replicas: 1000000000` used to pass and advertise 8.4 M devices.
TEST(ConfigHardening, ReplicasHaveAnUpperBound) {
  const auto at_bound = parse("sharing: {timeSlicing: {resources: [{name: gpu, replicas: " +
                              std::to_string(kMaxReplicas) + "}]}}");
  EXPECT_FALSE(has_error(at_bound)) << format_diagnostics(at_bound.diagnostics);
  const auto huge = parse("sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 1000000000\n");
  ASSERT_EQ(huge.diagnostics.size(), 1u);
  EXPECT_EQ(format_diagnostic(huge.diagnostics[0]),
            "c.yaml:5:17: error: replicas for sharing.timeSlicing.resources[0] must be at most " +
                std::to_string(kMaxReplicas) + ", got 1000000000");
  const auto group = parse("kgpu:\n  deviceGroups:\n    - {resource: a.com/b, devices: [/dev/x], replicas: 1000000000}\n");
  ASSERT_TRUE(has_error(group));
  EXPECT_THAT(format_diagnostics(group.diagnostics), HasSubstr("replicas must be an integer from 1 to 10000"));
}

// De-duplicating a `devices:` list was quadratic (40k entries: 2.8 s per reload). The result must
// stay the same: first occurrence kept, order kept.
TEST(ConfigHardening, LongDevicesListIsDeduplicatedKeepingFirstOccurrences) {
  constexpr int kDistinct = 20000;
  std::string list;
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < kDistinct; ++i) list += (list.empty() ? "" : ", ") + std::string("\"") + std::to_string(i) + "\"";
  const auto loaded = parse("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2, devices: [" + list + "]}]}}");
  ASSERT_FALSE(has_error(loaded)) << format_diagnostics(loaded.diagnostics);
  const auto& devices = std::get<std::vector<std::string>>(loaded.config.time_slicing.resources.at(0).devices.value);
  ASSERT_EQ(devices.size(), static_cast<size_t>(kDistinct));
  for (int i = 0; i < kDistinct; ++i) ASSERT_EQ(devices[static_cast<size_t>(i)], std::to_string(i));
}

}  // namespace
}  // namespace kgpu
