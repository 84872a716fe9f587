// Pod attribution: device IDs from PodResources mapped to telemetry entities (whole GPUs by uuid or
// index, replicas to their GPU, MIG devices to their GPU instance).
#include <gtest/gtest.h>

#include "telemetry/attribution.h"
#include "telemetry/targets.h"

namespace kgpu::telemetry {
namespace {

Inventory node() {
  Inventory inv;
  inv.driver_version = "550.54.15";
  Gpu g0;
  g0.index = 0;
  g0.uuid = "GPU-0";
  g0.product = "NVIDIA A100-SXM4-40GB";
  Gpu g1 = g0;
  g1.index = 1;
  g1.uuid = "GPU-1";
  g1.mig_enabled = true;
  MigDevice a;
  a.uuid = "MIG-a";
  a.index = 0;
  a.gpu_instance_id = 1;
  a.compute_instance_id = 0;
  a.profile = "3g.20gb";
  MigDevice b = a;  // a second compute instance of the same GPU instance
  b.uuid = "MIG-b";
  b.index = 1;
  b.compute_instance_id = 1;
  b.profile = "1c.3g.20gb";
  MigDevice c = a;
  c.uuid = "MIG-c";
  c.index = 2;
  c.gpu_instance_id = 9;
  c.profile = "1g.5gb";
  g1.mig_devices = {a, b, c};
  Gpu amd;
  amd.vendor = Vendor::Amd;
  amd.uuid = "amd-0";
  inv.gpus = {g0, g1, amd};
  return inv;
}

ContainerDevices held(std::string pod, std::string container, std::vector<std::string> ids,
                      std::string resource = "nvidia.com/gpu") {
  return ContainerDevices{"ns", std::move(pod), std::move(container), std::move(resource), std::move(ids)};
}

TEST(Targets, GpusThenTheirGpuInstancesAndNoOtherVendors) {
  auto t = targets_from_inventory(node());
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].uuid, "GPU-0");
  EXPECT_FALSE(t[0].gpu_instance_id);
  EXPECT_EQ(t[1].uuid, "GPU-1");
  EXPECT_FALSE(t[1].gpu_instance_id);
  EXPECT_EQ(t[2].uuid, "GPU-1");
  EXPECT_EQ(t[2].gpu_instance_id, 1u);
  EXPECT_EQ(t[2].gpu_instance_profile, "3g.20gb");
  EXPECT_EQ(t[2].read_uuid, "MIG-a");
  EXPECT_EQ(t[2].device_ids, (std::vector<std::string>{"MIG-a", "1:0", "MIG-b", "1:1"}));
  EXPECT_EQ(t[3].gpu_instance_id, 9u);
  EXPECT_EQ(t[3].gpu_instance_profile, "1g.5gb");
}

TEST(Targets, ComputeInstancePrefixIsNotPartOfTheGpuInstanceProfile) {
  EXPECT_EQ(gpu_instance_profile("1c.3g.20gb"), "3g.20gb");
  EXPECT_EQ(gpu_instance_profile("1g.10gb+me"), "1g.10gb+me");
  EXPECT_EQ(gpu_instance_profile("7g.80gb"), "7g.80gb");
}

TEST(Attribution, WholeGpuByUuidOrIndex) {
  auto t = targets_from_inventory(node());
  auto owners = attribute(t, {held("p0", "c0", {"GPU-0"})});
  EXPECT_EQ(owners[0], (std::vector<Owner>{{"p0", "ns", "c0"}}));
  owners = attribute(t, {held("p1", "c1", {"0"})});
  EXPECT_EQ(owners[0], (std::vector<Owner>{{"p1", "ns", "c1"}}));
  EXPECT_TRUE(owners[1].empty());
}

TEST(Attribution, ReplicasCountAsTheirGpuAndEachPodOnce) {
  auto t = targets_from_inventory(node());
  auto owners = attribute(t, {held("a", "main", {"GPU-0::0", "GPU-0::3"}, "nvidia.com/gpu.shared"),
                              held("b", "main", {"GPU-0::1"}, "nvidia.com/gpu.shared")});
  EXPECT_EQ(owners[0], (std::vector<Owner>{{"a", "ns", "main"}, {"b", "ns", "main"}}));
}

TEST(Attribution, MigDevicesByUuidOrIndexCountAsTheirGpuInstance) {
  auto t = targets_from_inventory(node());
  auto owners = attribute(t, {held("m", "c", {"MIG-b"}, "nvidia.com/mig-3g.20gb"),
                              held("n", "c", {"1:2"}, "nvidia.com/mig-1g.5gb")});
  EXPECT_TRUE(owners[1].empty()) << "the MIG-enabled GPU itself is not held";
  EXPECT_EQ(owners[2], (std::vector<Owner>{{"m", "ns", "c"}}));
  EXPECT_EQ(owners[3], (std::vector<Owner>{{"n", "ns", "c"}}));
}

TEST(Attribution, UnknownIdsAreIgnored) {
  auto t = targets_from_inventory(node());
  auto owners = attribute(t, {held("x", "c", {"amd-0", "GPU-unknown", "7"}, "amd.com/gpu")});
  for (const auto& o : owners) EXPECT_TRUE(o.empty());
}

}  // namespace
}  // namespace kgpu::telemetry
