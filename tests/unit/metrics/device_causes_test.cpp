// parse_device_causes: what `kgpu devices --live` reads back from the plugin's /metrics.
#include "metrics/device_causes.h"

#include <gtest/gtest.h>

namespace kgpu {
namespace {

TEST(DeviceCauses, RoundTripsWhatTheRegistryRenders) {
  Metrics m;
  std::vector<DeviceCause> causes{{"nvidia.com/gpu", "GPU-1", "XID 79 (GPU has fallen off the bus)"},
                                  {"nvidia.com/gpu", "GPU-2::3", "quote \" backslash \\ newline \n end"}};
  m.set_unhealthy_devices(causes);
  auto parsed = parse_device_causes(m.render());
  ASSERT_TRUE(parsed) << parsed.error().message;
  EXPECT_EQ(*parsed, causes);
}

TEST(DeviceCauses, OtherSeriesAreSkipped) {
  auto parsed = parse_device_causes("# HELP x\nkgpu_devices{resource=\"a\",health=\"healthy\"} 3\n");
  ASSERT_TRUE(parsed);
  EXPECT_TRUE(parsed->empty());
}

TEST(DeviceCauses, MalformedSeriesAreErrorsNamingTheLine) {
  for (const char* bad : {
           "kgpu_device_unhealthy{resource=\"a\",device=\"b\"} 1",            // no reason
           "kgpu_device_unhealthy{resource=\"a\",device=\"b\",reason=\"c} 1",  // unterminated
           "kgpu_device_unhealthy{resource=\"a\",device=\"b\",reason=\"c\\q\"} 1",  // bad escape
           "kgpu_device_unhealthy{resource=\"a\",device=\"b\",reason=\"c\"",   // no brace
       }) {
    auto parsed = parse_device_causes(std::string("# first\n") + bad + "\n");
    ASSERT_FALSE(parsed) << bad;
    EXPECT_EQ(parsed.error().message, "line 2 of /metrics: a malformed kgpu_device_unhealthy series") << bad;
  }
}

}  // namespace
}  // namespace kgpu
