// Issue 13: a plan whose ListAndWatch message would pass the kubelet's 4 MiB gRPC limit is refused
// (the kubelet would silently see zero devices), without ever building the oversized device list.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "deviceplugin/v1beta1/api.pb.h"
#include "plan/message_size.h"
#include "plan/plan.h"
#include "unit/plan/inventories.h"

namespace kgpu {
namespace {

using ::testing::HasSubstr;
using namespace kgpu::test;

// What the gRPC server sends for `r` (same construction as server/resource_server.cpp), with every
// device Unhealthy: the worst case the planner budgets for.
size_t serialized_bytes(const Resource& r) {
  v1beta1::ListAndWatchResponse msg;
  for (const auto& d : r.devices) {
    auto* pd = msg.add_devices();
    pd->set_id(d.id);
    pd->set_health("Unhealthy");
    if (!d.numa_nodes.empty()) {
      auto* topo = pd->mutable_topology();
      for (int64_t n : d.numa_nodes) topo->add_nodes()->set_id(n);
    }
  }
  return msg.ByteSizeLong();
}

Config time_sliced(int replicas) {
  Config c;
  c.time_slicing.resources = {replicated("nvidia.com/gpu", replicas)};
  return c;
}

TEST(MessageSize, MatchesProtobufForIdsNumaNodesAndReplicas) {
  Gpu no_numa = a100(2);
  no_numa.numa_node.reset();
  Gpu far_numa = a100(3, 300);  // a two-byte varint
  Gpu long_id = a100(4, 1);
  long_id.uuid = "GPU-" + std::string(200, 'x');  // a two-byte length
  const Inventory inv = inventory_of({a100(0, 0), a100(1, 1), no_numa, far_numa, long_id});
  for (int replicas : {1, 2, 9, 10, 11, 99, 100, 101, 1234}) {
    SCOPED_TRACE(replicas);
    const ResourcePlan p = plan(time_sliced(replicas), inv);
    const Resource* r = p.find("nvidia.com/gpu");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(list_and_watch_bytes(*r), serialized_bytes(*r));
    size_t replicated = 0;
    for (const auto& g : inv.gpus) {
      AdvertisedDevice d;
      d.id = g.uuid;
      if (g.numa_node) d.numa_nodes = {*g.numa_node};
      replicated += replicas == 1 ? device_entry_bytes(d.id.size(), d.numa_nodes) : replicated_entries_bytes(d, replicas);
    }
    EXPECT_EQ(replicated, serialized_bytes(*r));
  }
}

TEST(MessageSize, NegativeNumaIdTakesTenBytes) {
  Resource r;
  r.devices.push_back({"GPU-x", true, {-1}, 0, std::nullopt, -1});
  EXPECT_EQ(list_and_watch_bytes(r), serialized_bytes(r));
}

// 8 GPUs: from about 8,800 replicas the message passes 4 MiB. The config bound (kMaxReplicas)
// lets 10,000 through, so the planner must refuse and name the count that fits.
TEST(ReplicaBound, TooManyReplicasAreRefusedNamingTheLargestCountThatFits) {
  std::vector<Gpu> gpus;
  for (int i = 0; i < 8; ++i) {
    gpus.push_back(a100(i, i / 4));
    gpus.back().uuid = "GPU-8f9c2a51-0000-4a5b-9c3d-00000000000" + std::to_string(i);  // real length: 40
  }
  const Inventory inv = inventory_of(gpus);
  const ResourcePlan refused = plan(time_sliced(kMaxReplicas), inv);
  const Resource* r = refused.find("nvidia.com/gpu");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->sharing, SharingKind::None) << "served unshared, never as an empty list";
  EXPECT_EQ(r->devices.size(), 8u);
  ASSERT_EQ(refused.problems.size(), 1u);
  const std::string& problem = refused.problems[0];
  EXPECT_THAT(problem, HasSubstr("nvidia.com/gpu"));
  EXPECT_THAT(problem, HasSubstr("4194304-byte gRPC message limit"));
  const std::string marker = "the largest replica count that fits is ";
  const auto at = problem.find(marker);
  ASSERT_NE(at, std::string::npos) << problem;
  const int fits = std::stoi(problem.substr(at + marker.size()));

  // The named count really is the largest: it fits, one more does not.
  const ResourcePlan largest = plan(time_sliced(fits), inv);
  ASSERT_TRUE(largest.problems.empty()) << largest.problems[0];
  EXPECT_EQ(largest.find("nvidia.com/gpu")->devices.size(), 8u * static_cast<size_t>(fits));
  EXPECT_LE(serialized_bytes(*largest.find("nvidia.com/gpu")), kKubeletMaxMessageBytes);
  const ResourcePlan one_more = plan(time_sliced(fits + 1), inv);
  ASSERT_EQ(one_more.problems.size(), 1u);
  EXPECT_THAT(one_more.problems[0], HasSubstr(marker + std::to_string(fits)));
  EXPECT_GT(fits, 7000);  // the issue measured about 8,800 (all Healthy, no NUMA)
  EXPECT_LT(fits, 9000);
}

// The check costs O(devices × log(replicas)): a node far beyond any real one with the largest
// replica count is refused instantly, without allocating the 10^8 IDs it asks for.
TEST(ReplicaBound, HugeRequestIsRefusedWithoutBuildingIt) {
  std::vector<Gpu> gpus;
  for (int i = 0; i < 70000; ++i) gpus.push_back(a100(i));  // unshared: 2.5 MB; 2 replicas: over 4 MiB
  const ResourcePlan p = plan(time_sliced(kMaxReplicas), inventory_of(gpus));
  ASSERT_FALSE(p.problems.empty());
  EXPECT_THAT(p.problems[0], HasSubstr("no replica count fits on this node"));
  EXPECT_EQ(p.find("nvidia.com/gpu")->devices.size(), 70000u);
}

// Nothing to refuse without replicas, but never silent: the kubelet would see zero devices.
TEST(ReplicaBound, UnsharedListOverTheLimitIsReported) {
  std::vector<Gpu> gpus;
  for (int i = 0; i < 100000; ++i) {
    gpus.push_back(a100(i));
    gpus.back().uuid = "GPU-8f9c2a51-0000-4a5b-9c3d-" + std::to_string(100000000000 + i);
  }
  const ResourcePlan p = plan(Config{}, inventory_of(gpus));
  ASSERT_EQ(p.problems.size(), 1u);
  EXPECT_THAT(p.problems[0], HasSubstr("Resource nvidia.com/gpu has 100000 devices"));
  EXPECT_THAT(p.problems[0], HasSubstr("the kubelet will see none of them"));
}

// Issue 13 "Also": long `devices:` lists. Each item is looked up once (O(items + devices)); the
// result is the same as matching every item against every device.
TEST(SelectorBound, LongDevicesListSelectsExactlyTheNamedDevices) {
  std::vector<Gpu> gpus;
  for (int i = 0; i < 64; ++i) gpus.push_back(a100(i));
  std::vector<std::string> items;
  for (int i = 0; i < 40000; ++i) items.push_back("GPU-missing-" + std::to_string(i));
  items.push_back("007");                 // GPU 7 by index, leading zeros allowed
  items.push_back(gpus[42].uuid);         // GPU 42 by UUID
  Config c;
  c.time_slicing.resources = {replicated("nvidia.com/gpu", 2, select_list(items))};
  const ResourcePlan p = plan(c, inventory_of(gpus));
  std::vector<std::string> shared;
  for (const auto& d : p.find("nvidia.com/gpu")->devices)
    if (d.replica >= 0) shared.push_back(d.id);
  EXPECT_EQ(shared, (std::vector<std::string>{"GPU-a100-0007::0", "GPU-a100-0007::1", "GPU-a100-00042::0",
                                              "GPU-a100-00042::1"}));
  EXPECT_EQ(p.problems.size(), 40000u);  // each missing device named once
}

}  // namespace
}  // namespace kgpu
