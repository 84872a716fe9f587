// Metrics::add_exposition (other exporters' families after kgpu's) and the last XID per GPU that
// GPU telemetry reports as DCGM_FI_DEV_XID_ERRORS.
#include <gtest/gtest.h>

#include "metrics/metrics.h"

namespace kgpu {
namespace {

TEST(MetricsExposition, AddedRenderersAppendAfterKgpuFamiliesOnEveryRender) {
  Metrics m("1.2.3");
  int calls = 0;
  m.add_exposition([&calls](std::string& out) {
    ++calls;
    out += "# TYPE extra_metric gauge\nextra_metric 1\n";
  });
  const std::string first = m.render();
  EXPECT_LT(first.find("kgpu_config_reloads_total"), first.find("extra_metric 1\n"));
  EXPECT_EQ(first.substr(first.size() - 15), "extra_metric 1\n");
  m.render();
  EXPECT_EQ(calls, 2) << "read on every scrape, never cached";
}

TEST(MetricsExposition, LastXidIsPerGpuAndTheMostRecent) {
  Metrics m;
  EXPECT_FALSE(m.last_xid("GPU-a"));
  m.count_xid(13, "GPU-a");
  m.count_xid(79, "GPU-a");
  m.count_xid(48, "GPU-b");
  m.count_xid(31);  // no GPU named: counted, attributed to none
  EXPECT_EQ(m.last_xid("GPU-a"), 79u);
  EXPECT_EQ(m.last_xid("GPU-b"), 48u);
  EXPECT_FALSE(m.last_xid("GPU-c"));
  EXPECT_NE(m.render().find("kgpu_health_xid_events_total{xid=\"31\"} 1"), std::string::npos);
}

}  // namespace
}  // namespace kgpu
