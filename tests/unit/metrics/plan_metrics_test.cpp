// record_plan: the bridge from the daemon's plan to kgpu_devices and to /readyz.
#include "metrics/plan_metrics.h"

#include <gtest/gtest.h>

#include "exposition_parser.h"

namespace kgpu {
namespace {

ResourcePlan plan_with(std::initializer_list<std::pair<const char*, std::vector<bool>>> resources) {
  ResourcePlan plan;
  for (const auto& [name, health] : resources) {
    Resource r;
    r.name = name;
    for (std::size_t i = 0; i < health.size(); ++i) {
      AdvertisedDevice d;
      d.id = "GPU-" + std::to_string(i);
      d.healthy = health[i];
      r.devices.push_back(d);
    }
    plan.resources.push_back(r);
  }
  return plan;
}

TEST(PlanMetrics, DevicesFollowThePlanAndVanishedResourcesRetire) {
  Metrics m;
  record_plan(m, plan_with({{"nvidia.com/gpu", {true, false, true}}, {"nvidia.com/mig-1g.10gb", {true}}}));
  auto e = testing::parse_exposition(m.render());
  ASSERT_EQ(e.error, "");
  EXPECT_EQ(e.value("kgpu_devices", {{"resource", "nvidia.com/gpu"}, {"health", "healthy"}}), 2.0);
  EXPECT_EQ(e.value("kgpu_devices", {{"resource", "nvidia.com/gpu"}, {"health", "unhealthy"}}), 1.0);
  EXPECT_EQ(e.value("kgpu_devices", {{"resource", "nvidia.com/mig-1g.10gb"}, {"health", "healthy"}}), 1.0);

  record_plan(m, plan_with({{"nvidia.com/gpu", {true, true, true}}}));
  e = testing::parse_exposition(m.render());
  ASSERT_EQ(e.error, "");
  EXPECT_EQ(e.value("kgpu_devices", {{"resource", "nvidia.com/gpu"}, {"health", "unhealthy"}}), 0.0);
  EXPECT_FALSE(e.value("kgpu_devices", {{"resource", "nvidia.com/mig-1g.10gb"}, {"health", "healthy"}}));
  EXPECT_EQ(m.active_resources(), std::vector<std::string>{"nvidia.com/gpu"});
}

TEST(PlanMetrics, ReadyOnlyAfterAPlanAndEveryRegistration) {
  Metrics m;
  EXPECT_FALSE(m.all_registered()) << "no plan yet";
  record_plan(m, plan_with({{"nvidia.com/gpu", {true}}, {"nvidia.com/gpu.shared", {true}}}));
  EXPECT_FALSE(m.all_registered());
  m.set_registered("nvidia.com/gpu", true);
  EXPECT_FALSE(m.all_registered());
  m.set_registered("nvidia.com/gpu.shared", true);
  EXPECT_TRUE(m.all_registered());
  m.set_registered("nvidia.com/gpu", false);  // kubelet restarted: not ready until re-registered
  EXPECT_FALSE(m.all_registered());
  m.set_registered("nvidia.com/gpu", true);
  record_plan(m, plan_with({{"nvidia.com/gpu", {true}}}));  // the retired one no longer counts
  EXPECT_TRUE(m.all_registered());
}

TEST(PlanMetrics, EmptyPlanIsReady) {
  Metrics m;
  record_plan(m, ResourcePlan{});
  EXPECT_TRUE(m.all_registered());
}

}  // namespace
}  // namespace kgpu
