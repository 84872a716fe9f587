// diff_plans(): added / removed / changed / health-only resources between two plans.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plan/plan.h"
#include "plan/plan_diff.h"
#include "unit/plan/inventories.h"

namespace kgpu {
namespace {

using ::testing::ElementsAre;
using ::testing::IsEmpty;
using namespace kgpu::test;

Config mixed() {
  Config c;
  c.mig_strategy = MigStrategy::Mixed;
  return c;
}

TEST(DiffPlans, SamePlanIsEmpty) {
  const auto p = plan(mixed(), inventory_of({a100(0), a100_mig(1, {"1g.5gb"})}));
  const auto d = diff_plans(p, p);
  EXPECT_TRUE(d.empty());
  EXPECT_THAT(d.unchanged, ElementsAre("nvidia.com/gpu", "nvidia.com/mig-1g.5gb"));
}

TEST(DiffPlans, MigReconfigurationAddsAndRemoves) {
  const auto before = plan(mixed(), inventory_of({a100(0), a100_mig(1, {"1g.5gb", "1g.5gb"})}));
  const auto after = plan(mixed(), inventory_of({a100(0), a100_mig(1, {"3g.20gb"})}));
  const auto d = diff_plans(before, after);
  EXPECT_THAT(d.added, ElementsAre("nvidia.com/mig-3g.20gb"));
  EXPECT_THAT(d.removed, ElementsAre("nvidia.com/mig-1g.5gb"));
  EXPECT_THAT(d.changed, IsEmpty());
  EXPECT_THAT(d.unchanged, ElementsAre("nvidia.com/gpu"));
  EXPECT_FALSE(d.empty());
}

TEST(DiffPlans, HealthChangeIsHealthOnly) {
  Gpu sick = a100(1);
  sick.health = {false, "XID 79"};
  const auto before = plan(Config{}, inventory_of({a100(0), a100(1)}));
  const auto after = plan(Config{}, inventory_of({a100(0), sick}));
  const auto d = diff_plans(before, after);
  EXPECT_THAT(d.changed, ElementsAre("nvidia.com/gpu"));
  EXPECT_THAT(d.health_only, ElementsAre("nvidia.com/gpu"));
}

TEST(DiffPlans, DeviceSetChangeIsNotHealthOnly) {
  const auto before = plan(Config{}, inventory_of({a100(0), a100(1)}));
  const auto after = plan(Config{}, inventory_of({a100(0)}));
  const auto d = diff_plans(before, after);
  EXPECT_THAT(d.changed, ElementsAre("nvidia.com/gpu"));
  EXPECT_THAT(d.health_only, IsEmpty());
}

TEST(DiffPlans, SharingSettingsChangeIsAChange) {
  Config a, b;
  a.time_slicing.resources = {replicated("nvidia.com/gpu", 2)};
  b = a;
  b.time_slicing.fail_requests_greater_than_one = true;
  const auto inv = inventory_of({a100(0)});
  const auto d = diff_plans(plan(a, inv), plan(b, inv));
  EXPECT_THAT(d.changed, ElementsAre("nvidia.com/gpu"));
  EXPECT_THAT(d.health_only, IsEmpty());
}

}  // namespace
}  // namespace kgpu
