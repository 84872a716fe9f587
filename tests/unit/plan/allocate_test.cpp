// allocate(): request validation, replica → device mapping and the MPS client edits.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "plan/allocate.h"
#include "plan/mps_limits.h"
#include "plan/plan.h"
#include "unit/plan/inventories.h"

namespace kgpu {
namespace {

using ::testing::AllOf;
using ::testing::Contains;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using namespace kgpu::test;

struct Node {
  Config config;
  Inventory inventory;
  ResourcePlan plan;
  const Resource& resource(const std::string& name) const { return *plan.find(name); }
};

Node time_sliced_node(bool fail_gt1) {
  Node n;
  n.config.time_slicing.fail_requests_greater_than_one = fail_gt1;
  n.config.time_slicing.resources = {replicated("nvidia.com/gpu", 4)};
  n.inventory = inventory_of({a100(0), a100(1)});
  n.plan = plan(n.config, n.inventory);
  return n;
}

Node mps_node(int replicas) {
  Node n;
  n.config.mps_root = "/run/nvidia/mps";
  n.config.mps = ReplicatedResources{};
  n.config.mps->fail_requests_greater_than_one = false;
  n.config.mps->resources = {replicated("nvidia.com/gpu", replicas)};
  Gpu first = a100(0);
  first.pci_bus_id = "00000000:81:00.0";  // PCI order differs from inventory order: GPU 1 first
  Gpu second = a100(1);
  second.memory_bytes = 80 * kGiB;
  n.inventory = inventory_of({first, second});
  n.plan = plan(n.config, n.inventory);
  return n;
}

TEST(BackingDevices, EmptyRequestIsInvalid) {
  const Node n = time_sliced_node(false);
  const auto r = backing_devices(n.inventory, n.resource("nvidia.com/gpu"), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Error::Code::InvalidArgument);
  EXPECT_THAT(r.error().message, AllOf(HasSubstr("\"nvidia.com/gpu\""), HasSubstr("no device IDs")));
}

TEST(BackingDevices, UnknownIdIsNamed) {
  const Node n = time_sliced_node(false);
  const auto r = backing_devices(n.inventory, n.resource("nvidia.com/gpu"), {"GPU-a100-0000::0", "GPU-bogus"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Error::Code::InvalidArgument);
  EXPECT_THAT(r.error().message, AllOf(HasSubstr("\"nvidia.com/gpu\""), HasSubstr("unknown device \"GPU-bogus\"")));
}

TEST(BackingDevices, RepeatedIdIsAllocatedOnce) {
  // NVIDIA's plugin de-duplicates since v0.18 instead of refusing the container.
  const Node n = time_sliced_node(false);
  const auto r = backing_devices(n.inventory, n.resource("nvidia.com/gpu"),
                                 {"GPU-a100-0001::1", "GPU-a100-0000::1", "GPU-a100-0001::1"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_THAT(*r, ElementsAre(BackingDevice{1, std::nullopt}, BackingDevice{0, std::nullopt}));
}

TEST(RepeatedIds, EachRepeatedIdOnceInOrder) {
  EXPECT_THAT(repeated_ids({"a", "b", "a", "c", "b", "a"}), ElementsAre("a", "b"));
  EXPECT_TRUE(repeated_ids({"a", "b", "c"}).empty());
  EXPECT_TRUE(repeated_ids({}).empty());
}

TEST(Allocate, RepeatedIdCountsOnceForMpsShares) {
  // Two distinct replicas of GPU 0 give 50%; the same replica sent twice is one replica: 25%.
  const Node n = mps_node(4);
  const auto e = allocate(n.config, n.inventory, n.resource("nvidia.com/gpu"), {"GPU-a100-0000::3", "GPU-a100-0000::3"});
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->envs.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
  EXPECT_EQ(e->envs.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=10240M");
}

TEST(BackingDevices, FailRequestsGreaterThanOneNamesResourceAndLimit) {
  const Node n = time_sliced_node(true);
  const auto r = backing_devices(n.inventory, n.resource("nvidia.com/gpu"), {"GPU-a100-0000::0", "GPU-a100-0001::0"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Error::Code::InvalidArgument);
  EXPECT_THAT(r.error().message, AllOf(HasSubstr("\"nvidia.com/gpu\""),
                                       HasSubstr("maximum request size for shared resources is 1; found 2")));
  EXPECT_TRUE(backing_devices(n.inventory, n.resource("nvidia.com/gpu"), {"GPU-a100-0001::3"}).ok());
}

TEST(BackingDevices, ReplicasMapToDistinctGpusInRequestOrder) {
  const Node n = time_sliced_node(false);
  const auto r = backing_devices(n.inventory, n.resource("nvidia.com/gpu"),
                                 {"GPU-a100-0001::2", "GPU-a100-0000::1", "GPU-a100-0001::0", "GPU-a100-0000::3"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_THAT(*r, ElementsAre(BackingDevice{1, std::nullopt}, BackingDevice{0, std::nullopt}));
}

TEST(BackingDevices, MigDevicesMapToParentAndPosition) {
  Config c;
  c.mig_strategy = MigStrategy::Mixed;
  c.device_id_strategy = DeviceIdStrategy::Index;
  const auto inv = inventory_of({a100(0), a100_mig(1, {"1g.5gb", "2g.10gb", "1g.5gb"})});
  const auto p = plan(c, inv);
  // deviceIDStrategy=index changes only runtime IDs: the kubelet still requests MIG UUIDs.
  const auto r = backing_devices(inv, *p.find("nvidia.com/mig-1g.5gb"), {"MIG-1-2-1g.5gb", "MIG-1-0-1g.5gb"});
  ASSERT_TRUE(r.ok()) << r.error().message;
  EXPECT_THAT(*r, ElementsAre(BackingDevice{1, 2}, BackingDevice{1, 0}));
}

TEST(BackingDevices, PlanOutOfStepWithInventoryIsAnInternalError) {
  Node n = time_sliced_node(false);
  n.inventory.gpus.pop_back();
  const auto r = backing_devices(n.inventory, n.resource("nvidia.com/gpu"), {"GPU-a100-0001::0"});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, Error::Code::Internal);
}

TEST(Allocate, ValidationErrorsPassThrough) {
  const Node n = time_sliced_node(true);
  const auto r = allocate(n.config, n.inventory, n.resource("nvidia.com/gpu"), {"GPU-a100-0000::0", "GPU-a100-0000::1"});
  ASSERT_FALSE(r.ok());
  EXPECT_THAT(r.error().message, HasSubstr("maximum request size"));
}

TEST(MpsLimits, Arithmetic) {
  EXPECT_EQ(mps_thread_percentage(4, 1), 25);
  EXPECT_EQ(mps_thread_percentage(3, 1), 33);
  EXPECT_EQ(mps_thread_percentage(3, 2), 66);
  EXPECT_EQ(mps_thread_percentage(4, 9), 100);
  EXPECT_EQ(mps_memory_limit_mib(40 * kGiB, 4, 1), 10240u);
  EXPECT_EQ(mps_memory_limit_mib(40 * kGiB, 4, 2), 20480u);
  EXPECT_EQ(mps_memory_limit_mib(40 * kGiB, 3, 1), 13653u);
  EXPECT_EQ(mps_memory_limit_mib(40 * kGiB, 4, 7), 40960u);
}

TEST(Allocate, MpsGivesPipeShmAndScaledLimits) {
  const Node n = mps_node(4);
  const Resource& r = n.resource("nvidia.com/gpu");
  ASSERT_EQ(r.sharing, SharingKind::Mps);
  const auto e = allocate(n.config, n.inventory, r, {"GPU-a100-0000::0", "GPU-a100-0000::3"});
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->envs.at("CUDA_MPS_PIPE_DIRECTORY"), "/mps/nvidia.com/gpu/pipe");
  EXPECT_EQ(e->envs.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "50");
  EXPECT_EQ(e->envs.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=20480M");
  EXPECT_THAT(e->mounts, Contains(Mount{"/mps/nvidia.com/gpu/pipe", "/run/nvidia/mps/nvidia.com/gpu/pipe", false}));
  EXPECT_THAT(e->mounts, Contains(Mount{"/dev/shm", "/run/nvidia/mps/shm", false}));
}

TEST(Allocate, MpsLimitsPerGpuInPciOrderAndSmallestThreadShare) {
  const Node n = mps_node(4);
  // GPU 0 (40 GiB, bus 81) gets one of its 4 replicas, GPU 1 (80 GiB, bus 01) two: the container
  // enumerates GPU 1 as ordinal 0.
  const auto e = allocate(n.config, n.inventory, n.resource("nvidia.com/gpu"),
                          {"GPU-a100-0001::2", "GPU-a100-0000::1", "GPU-a100-0001::0"});
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->envs.at("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"), "0=40960M,1=10240M");
  EXPECT_EQ(e->envs.at("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), "25");
}

TEST(Allocate, TimeSlicingHasNoMpsEdits) {
  const Node n = time_sliced_node(false);
  const auto e = allocate(n.config, n.inventory, n.resource("nvidia.com/gpu"), {"GPU-a100-0000::0"});
  ASSERT_TRUE(e.ok()) << e.error().message;
  EXPECT_EQ(e->envs.count("CUDA_MPS_PIPE_DIRECTORY"), 0u);
  EXPECT_EQ(e->envs.count("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"), 0u);
}

}  // namespace
}  // namespace kgpu
