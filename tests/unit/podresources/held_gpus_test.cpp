// HeldGpus: a config switch that changes a GPU's IDs must not let the kubelet hand that GPU out
// again while a pod still holds it under its old ID.
#include "podresources/held_gpus.h"

#include <gtest/gtest.h>

namespace kgpu::podresources {
namespace {

// `gpus` GPUs, each advertised `replicas` times under nvidia.com/gpu ("GPU-<n>" or "GPU-<n>::<r>").
ResourcePlan plan_of(size_t gpus, int replicas) {
  Resource r;
  r.name = "nvidia.com/gpu";
  for (size_t g = 0; g < gpus; ++g) {
    if (replicas == 1) {
      AdvertisedDevice d;
      d.id = "GPU-" + std::to_string(g);
      d.gpu = g;
      r.devices.push_back(d);
      continue;
    }
    for (int i = 0; i < replicas; ++i) {
      AdvertisedDevice d;
      d.id = "GPU-" + std::to_string(g) + "::" + std::to_string(i);
      d.gpu = g;
      d.replica = i;
      r.devices.push_back(d);
    }
  }
  ResourcePlan p;
  p.resources.push_back(r);
  return p;
}

ContainerDevices pod(const std::string& name, const std::string& resource, std::vector<std::string> ids) {
  return {"default", name, "main", resource, std::move(ids)};
}

std::vector<bool> health_of_gpu(const ResourcePlan& p, size_t gpu) {
  std::vector<bool> out;
  for (const auto& d : p.resources[0].devices)
    if (d.gpu == gpu) out.push_back(d.healthy);
  return out;
}

TEST(HeldGpus, UnchangedIdsNeedNoCheck) {
  HeldGpus held;
  held.served(plan_of(2, 1));
  EXPECT_FALSE(held.needs_check(plan_of(2, 1)));
}

TEST(HeldGpus, ASwitchThatRenamesAHeldGpuWithholdsItUntilThePodIsGone) {
  HeldGpus held;
  held.served(plan_of(2, 1));  // GPU-0, GPU-1
  ResourcePlan next = plan_of(2, 4);  // time-slicing: GPU-0::0..3, GPU-1::0..3
  ASSERT_TRUE(held.needs_check(next));

  auto withheld = held.withhold(next, {pod("trainer", "nvidia.com/gpu", {"GPU-1"})});
  ASSERT_EQ(held.holds().size(), 1u);
  EXPECT_EQ(held.holds()[0], (Hold{"nvidia.com/gpu", "GPU-1", 1, "default/trainer"}));
  EXPECT_EQ(health_of_gpu(withheld, 1), std::vector<bool>(4, false));
  EXPECT_EQ(health_of_gpu(withheld, 0), std::vector<bool>(4, true));
  ASSERT_EQ(withheld.problems.size(), 1u);
  EXPECT_NE(withheld.problems[0].find("default/trainer"), std::string::npos) << withheld.problems[0];
  EXPECT_NE(withheld.problems[0].find("GPU-1"), std::string::npos);
  held.served(withheld);

  // Replans while the pod runs keep checking and keep the GPU out.
  ASSERT_TRUE(held.needs_check(next));
  withheld = held.withhold(next, {pod("trainer", "nvidia.com/gpu", {"GPU-1"})});
  EXPECT_EQ(health_of_gpu(withheld, 1), std::vector<bool>(4, false));
  held.served(withheld);

  // The pod is gone: the GPU comes back, and nothing needs checking any more.
  ASSERT_TRUE(held.needs_check(next));
  withheld = held.withhold(next, {});
  EXPECT_TRUE(held.holds().empty());
  EXPECT_EQ(health_of_gpu(withheld, 1), std::vector<bool>(4, true));
  EXPECT_TRUE(withheld.problems.empty());
  held.served(withheld);
  EXPECT_FALSE(held.needs_check(next));
}

TEST(HeldGpus, IdsTheNewPlanStillAdvertisesAndOtherResourcesAreNotHolds) {
  HeldGpus held;
  held.served(plan_of(2, 2));          // GPU-n::0, ::1
  ResourcePlan next = plan_of(2, 4);   // ::0 and ::1 survive, so the kubelet still tracks them
  auto withheld = held.withhold(next, {pod("a", "nvidia.com/gpu", {"GPU-0::1"}), pod("b", "example.com/nic", {"GPU-1"})});
  EXPECT_TRUE(held.holds().empty());
  EXPECT_EQ(health_of_gpu(withheld, 0), std::vector<bool>(4, true));
  EXPECT_EQ(health_of_gpu(withheld, 1), std::vector<bool>(4, true));
}

TEST(HeldGpus, IdsNoPodHoldsAreForgotten) {
  HeldGpus held;
  held.served(plan_of(2, 1));
  ResourcePlan next = plan_of(2, 4);
  held.served(held.withhold(next, {}));
  EXPECT_FALSE(held.needs_check(next));
  EXPECT_FALSE(held.needs_check(plan_of(2, 4)));
}

}  // namespace
}  // namespace kgpu::podresources
