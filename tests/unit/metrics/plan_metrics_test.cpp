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

// Issue 30, item 8: /readyz says why it is not ready, a withheld resource included.
TEST(PlanMetrics, NotReadyReasonNamesWithheldAndUnregisteredResources) {
  Metrics m;
  EXPECT_EQ(m.not_ready_reason(), "not ready: no device plan applied yet\n");
  record_plan(m, plan_with({{"nvidia.com/gpu", {true}}}));
  EXPECT_EQ(m.not_ready_reason(), "not ready: nvidia.com/gpu is not registered with the kubelet\n");
  m.set_registered("nvidia.com/gpu", true);
  EXPECT_EQ(m.not_ready_reason(), "");
  m.set_withheld({{"nvidia.com/gpu.shared", "waiting for the MPS control daemon"}});
  EXPECT_EQ(m.not_ready_reason(), "not ready: nvidia.com/gpu.shared is withheld: waiting for the MPS control daemon\n");
  auto e = testing::parse_exposition(m.render());
  ASSERT_EQ(e.error, "");
  EXPECT_EQ(e.value("kgpu_resource_withheld",
                    {{"resource", "nvidia.com/gpu.shared"}, {"reason", "waiting for the MPS control daemon"}}),
            1.0);
  m.set_withheld({});
  EXPECT_EQ(m.not_ready_reason(), "");
}

// Issue 30, item 6: each Unhealthy device's cause is on /metrics for `kgpu devices --live`.
TEST(PlanMetrics, UnhealthyDevicesCarryTheirCause) {
  Inventory inv;
  inv.gpus.resize(2);
  inv.gpus[1].health = {false, "XID 79 (GPU has fallen off the bus)"};
  MigDevice mig;
  mig.health = {false, "XID 94 on MIG"};
  inv.gpus[0].mig_devices.push_back(mig);
  ResourcePlan plan = plan_with({{"nvidia.com/gpu", {true, false, false}}});
  plan.resources[0].devices[1].gpu = 1;
  plan.resources[0].devices[2].gpu = 0;
  plan.resources[0].devices[2].mig = 0;
  Metrics m;
  record_plan(m, inv, plan);
  auto e = testing::parse_exposition(m.render());
  ASSERT_EQ(e.error, "");
  EXPECT_EQ(e.value("kgpu_device_unhealthy", {{"resource", "nvidia.com/gpu"},
                                              {"device", "GPU-1"},
                                              {"reason", "XID 79 (GPU has fallen off the bus)"}}),
            1.0);
  EXPECT_EQ(e.value("kgpu_device_unhealthy",
                    {{"resource", "nvidia.com/gpu"}, {"device", "GPU-2"}, {"reason", "XID 94 on MIG"}}),
            1.0);
  EXPECT_FALSE(e.value("kgpu_device_unhealthy", {{"resource", "nvidia.com/gpu"}, {"device", "GPU-0"}, {"reason", ""}}));
  // A healthy GPU behind an Unhealthy ID: the held-GPU filter marked it.
  inv.gpus[1].health = {};
  EXPECT_NE(unhealthy_cause(inv, plan.resources[0].devices[1]).find("a running pod holds this GPU"), std::string::npos);
  record_plan(m, inv, plan_with({{"nvidia.com/gpu", {true}}}));
  EXPECT_EQ(m.render().find("kgpu_device_unhealthy{"), std::string::npos) << "recovered: the series leave";
}

}  // namespace
}  // namespace kgpu
