// preferred_allocation behaviour beyond optimality: input errors, fragmentation and NUMA
// preferences on known node shapes, degraded topology, replicas and MIG policies, explanations.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "alloc/preferred.h"
#include "unit/alloc/topologies.h"

namespace kgpu {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::UnorderedElementsAre;

std::vector<std::string> all_ids(const Resource& r) {
  std::vector<std::string> out;
  for (const auto& d : r.devices) out.push_back(d.id);
  return out;
}

std::vector<std::string> without(std::vector<std::string> ids, const std::vector<std::string>& drop) {
  std::erase_if(ids, [&](const auto& id) { return std::find(drop.begin(), drop.end(), id) != drop.end(); });
  return ids;
}

class PolicyTest : public ::testing::Test {
 protected:
  Config config;
};

TEST_F(PolicyTest, RejectsInvalidRequests) {
  const auto inv = testing::dgx_a100();
  const auto r = testing::whole_gpus(inv);
  const auto avail = std::vector<std::string>{"GPU-0", "GPU-1"};
  auto too_big = preferred_allocation(config, inv, r, avail, {}, 3);
  ASSERT_FALSE(too_big.ok());
  EXPECT_EQ(too_big.error().code, Error::Code::InvalidArgument);
  EXPECT_THAT(too_big.error().message, HasSubstr("exceeds the 2 available"));

  auto zero = preferred_allocation(config, inv, r, avail, {}, 0);
  ASSERT_FALSE(zero.ok());
  EXPECT_THAT(zero.error().message, HasSubstr("at least 1"));

  auto unknown = preferred_allocation(config, inv, r, {"GPU-0", "GPU-99"}, {}, 1);
  ASSERT_FALSE(unknown.ok());
  EXPECT_THAT(unknown.error().message, HasSubstr("GPU-99"));

  auto must_missing = preferred_allocation(config, inv, r, avail, {"GPU-5"}, 2);
  ASSERT_FALSE(must_missing.ok());
  EXPECT_THAT(must_missing.error().message, HasSubstr("GPU-5"));

  auto must_too_many = preferred_allocation(config, inv, r, avail, {"GPU-0", "GPU-1"}, 1);
  ASSERT_FALSE(must_too_many.ok());
  EXPECT_THAT(must_too_many.error().message, HasSubstr("exceed the allocation size"));
}

TEST_F(PolicyTest, RepeatedAvailableIdsAreTolerated) {
  const auto inv = testing::t4x2();
  const auto r = testing::whole_gpus(inv);
  auto got = preferred_allocation(config, inv, r, {"GPU-1", "GPU-1", "GPU-0"}, {}, 2);
  ASSERT_TRUE(got.ok()) << got.error().message;
  EXPECT_THAT(*got, UnorderedElementsAre("GPU-0", "GPU-1"));
}

TEST_F(PolicyTest, MustIncludeComesFirstAndIsKept) {
  const auto inv = testing::dgx_a100();
  const auto r = testing::whole_gpus(inv);
  auto got = preferred_allocation(config, inv, r, all_ids(r), {"GPU-6"}, 2);
  ASSERT_TRUE(got.ok());
  // GPU-7 shares GPU-6's PCIe switch.
  EXPECT_THAT(*got, ElementsAre("GPU-6", "GPU-7"));
}

TEST_F(PolicyTest, PrefersPcieSwitchPairOnNvswitchNode) {
  const auto inv = testing::dgx_a100();
  const auto r = testing::whole_gpus(inv);
  auto got = preferred_allocation(config, inv, r, all_ids(r), {}, 2);
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(*got, ElementsAre("GPU-0", "GPU-1"));
  auto four = preferred_allocation(config, inv, r, all_ids(r), {}, 4);
  ASSERT_TRUE(four.ok());
  EXPECT_THAT(*four, ElementsAre("GPU-0", "GPU-1", "GPU-2", "GPU-3"));  // one socket
}

TEST_F(PolicyTest, FragmentationTieBreakTakesTheOrphan) {
  // GPU-1 is in use, so GPU-0 has lost its switch partner. A one-GPU request should take GPU-0
  // and leave the intact pairs free; all single GPUs score the same on their own.
  const auto inv = testing::dgx_a100();
  const auto r = testing::whole_gpus(inv);
  auto got = preferred_allocation(config, inv, r, without(all_ids(r), {"GPU-1"}), {}, 1);
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(*got, ElementsAre("GPU-0"));
  // Same with GPU-4 in use: GPU-5 is now the orphan, although GPU-0 has the lower index.
  got = preferred_allocation(config, inv, r, without(all_ids(r), {"GPU-4"}), {}, 1);
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(*got, ElementsAre("GPU-5"));
}

TEST_F(PolicyTest, PrefersMustIncludeNumaNode) {
  const auto inv = testing::l4x4_pairs();
  const auto r = testing::whole_gpus(inv);
  auto got = preferred_allocation(config, inv, r, {"GPU-0", "GPU-2", "GPU-3"}, {"GPU-2"}, 2);
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(*got, ElementsAre("GPU-2", "GPU-3"));
}

TEST_F(PolicyTest, NvlinkBeatsPcieProximity) {
  // 0-1 share a PCIe switch but have no NVLink; 0-2 have 2 lanes across sockets.
  const auto inv = testing::make_inventory(
      3,
      [](size_t a, size_t b) {
        if (a == 0 && b == 1) return GpuLink{0, PcieLevel::SameBoard};
        if (a == 0 && b == 2) return GpuLink{2, PcieLevel::CrossSocket};
        return GpuLink{0, PcieLevel::CrossSocket};
      },
      [](size_t i) { return std::optional<int>(i == 2 ? 1 : 0); });
  const auto r = testing::whole_gpus(inv);
  auto got = preferred_allocation(config, inv, r, all_ids(r), {"GPU-0"}, 2);
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(*got, ElementsAre("GPU-0", "GPU-2"));
}

TEST_F(PolicyTest, MissingTopologyDegradesToNuma) {
  auto inv = testing::l4x4_pairs();
  inv.topology.links.clear();
  const auto r = testing::whole_gpus(inv);
  const TopologyScorer scorer(inv);
  EXPECT_FALSE(scorer.has_topology());
  auto got = preferred_allocation(config, scorer, r, {"GPU-0", "GPU-2", "GPU-3"}, {"GPU-3"}, 2);
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(*got, ElementsAre("GPU-3", "GPU-2"));  // same NUMA node as GPU-3
  // No NUMA either: still answers, deterministically.
  for (auto& g : inv.gpus) g.numa_node.reset();
  got = preferred_allocation(config, inv, r, all_ids(r), {}, 3);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), 3u);
}

TEST_F(PolicyTest, DevicePointingPastTheInventoryStillAnswers) {
  const auto inv = testing::t4x2();
  auto r = testing::whole_gpus(inv);
  AdvertisedDevice ghost;
  ghost.id = "GPU-ghost";
  ghost.gpu = 7;
  r.devices.push_back(ghost);
  auto got = preferred_allocation(config, inv, r, {"GPU-ghost", "GPU-0", "GPU-1"}, {}, 3);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(got->size(), 3u);
}

TEST_F(PolicyTest, ReplicasDistributedUseLeastLoadedDistinctGpus) {
  const auto inv = testing::l4x4_pairs();
  const auto r = testing::replicated(inv, 4);
  // GPU-0 has 2 replicas in use, GPU-2 has 1; GPU-1 and GPU-3 are idle.
  auto avail = without(all_ids(r), {"GPU-0::0", "GPU-0::1", "GPU-2::0"});
  auto got = preferred_allocation(config, inv, r, avail, {}, 2);
  ASSERT_TRUE(got.ok());
  // Idle GPUs 1 and 3 on different sockets beat anything involving a loaded GPU.
  EXPECT_THAT(*got, ElementsAre("GPU-1::0", "GPU-3::0"));
  got = preferred_allocation(config, inv, r, avail, {}, 1);
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(*got, ElementsAre("GPU-1::0"));
}

TEST_F(PolicyTest, ReplicasDistributedPrefersTopologyAmongEquallyLoaded) {
  const auto inv = testing::l4x4_pairs();
  const auto r = testing::replicated(inv, 2);
  auto got = preferred_allocation(config, inv, r, all_ids(r), {"GPU-2::1"}, 2);
  ASSERT_TRUE(got.ok());
  // GPU-3 shares GPU-2's PCIe switch; a second replica of GPU-2 would not be distinct.
  EXPECT_THAT(*got, ElementsAre("GPU-2::1", "GPU-3::0"));
}

TEST_F(PolicyTest, ReplicasDistributedWrapsAroundWhenMoreThanGpus) {
  const auto inv = testing::t4x2();
  const auto r = testing::replicated(inv, 4);
  auto got = preferred_allocation(config, inv, r, all_ids(r), {}, 5);
  ASSERT_TRUE(got.ok());
  int on0 = 0, on1 = 0;
  for (const auto& id : *got) (id.starts_with("GPU-0") ? on0 : on1)++;
  EXPECT_EQ(on0 + on1, 5);
  EXPECT_LE(std::abs(on0 - on1), 1);
}

TEST_F(PolicyTest, ReplicasPackedFillsTheBusiestGpu) {
  config.shared_devices_allocation_policy = SharedAllocationPolicy::Packed;
  const auto inv = testing::l4x4_pairs();
  const auto r = testing::replicated(inv, 4);
  auto avail = without(all_ids(r), {"GPU-2::0"});
  auto got = preferred_allocation(config, inv, r, avail, {}, 4);
  ASSERT_TRUE(got.ok());
  // GPU-2 is the most allocated: its 3 free replicas first, then its switch partner GPU-3.
  EXPECT_THAT(*got, ElementsAre("GPU-2::1", "GPU-2::2", "GPU-2::3", "GPU-3::0"));
}

std::set<char> parents_of(const std::vector<std::string>& ids) {
  std::set<char> parents;
  for (const auto& id : ids) parents.insert(id[4]);  // MIG-<gpu>-<k>
  return parents;
}

TEST_F(PolicyTest, MigPackedUsesOneParent) {
  config.shared_devices_allocation_policy = SharedAllocationPolicy::Packed;
  const auto inv = testing::l4x4_pairs();
  const auto r = testing::mig_devices(inv, 3);
  auto got = preferred_allocation(config, inv, r, all_ids(r), {"MIG-1-2"}, 3);
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(*got, ElementsAre("MIG-1-2", "MIG-1-0", "MIG-1-1"));
}

TEST_F(PolicyTest, MigFollowsSharedPolicyDistributedByDefault) {
  // NVIDIA v0.20: sharedDevicesAllocationPolicy (default distributed) governs MIG too.
  const auto inv = testing::l4x4_pairs();
  const auto r = testing::mig_devices(inv, 3);
  auto got = preferred_allocation(config, inv, r, all_ids(r), {}, 3);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(parents_of(*got).size(), 3u);
}

TEST_F(PolicyTest, MigAllocationPolicyOverridesSharedPolicyForMigOnly) {
  config.shared_devices_allocation_policy = SharedAllocationPolicy::Packed;
  config.mig_allocation_policy = MigAllocationPolicy::Spread;
  const auto inv = testing::l4x4_pairs();
  const auto mig = testing::mig_devices(inv, 3);
  auto got = preferred_allocation(config, inv, mig, all_ids(mig), {}, 3);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(parents_of(*got).size(), 3u);
  config.shared_devices_allocation_policy = SharedAllocationPolicy::Distributed;
  config.mig_allocation_policy = MigAllocationPolicy::SameParent;
  got = preferred_allocation(config, inv, mig, all_ids(mig), {}, 3);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(parents_of(*got).size(), 1u);
  // Replicas keep following sharedDevicesAllocationPolicy (distributed): two GPUs for two.
  const auto replicas = testing::replicated(inv, 4);
  got = preferred_allocation(config, inv, replicas, all_ids(replicas), {}, 2);
  ASSERT_TRUE(got.ok());
  EXPECT_NE((*got)[0].substr(0, 5), (*got)[1].substr(0, 5));
}

TEST_F(PolicyTest, PackedStartsOnAParentThatHoldsTheWholeRequest) {
  // a100-mig-mixed's shape: GPU 0 has one free 1g device, GPU 1 seven. Packed must not take GPU 0's
  // one and then one of GPU 1's: both come from GPU 1.
  config.shared_devices_allocation_policy = SharedAllocationPolicy::Packed;
  const auto inv = testing::l4x4_pairs();
  Resource r;
  r.name = "nvidia.com/mig-1g.5gb";
  auto add = [&](size_t gpu, size_t k) {
    AdvertisedDevice d;
    d.id = "MIG-" + std::to_string(gpu) + "-" + std::to_string(k);
    d.gpu = gpu;
    d.mig = k;
    r.devices.push_back(d);
  };
  add(0, 0);
  for (size_t k = 0; k < 7; ++k) add(1, k);
  auto got = preferred_allocation(config, inv, r, all_ids(r), {}, 2);
  ASSERT_TRUE(got.ok());
  EXPECT_THAT(*got, ElementsAre("MIG-1-0", "MIG-1-1"));
  // Three needed, one GPU holds them: still GPU 1; eight needed: GPU 1 full, then GPU 0.
  got = preferred_allocation(config, inv, r, all_ids(r), {}, 8);
  ASSERT_TRUE(got.ok());
  EXPECT_EQ(parents_of(*got), (std::set<char>{'0', '1'}));
}

TEST_F(PolicyTest, AnswerIsIndependentOfAvailableOrder) {
  const auto inv = testing::random_topology(10, 99);
  const auto r = testing::whole_gpus(inv);
  auto ids = all_ids(r);
  auto first = preferred_allocation(config, inv, r, ids, {"GPU-4"}, 4);
  std::reverse(ids.begin(), ids.end());
  auto second = preferred_allocation(config, inv, r, ids, {"GPU-4"}, 4);
  ASSERT_TRUE(first.ok() && second.ok());
  EXPECT_EQ(*first, *second);
}

TEST_F(PolicyTest, ExplainShowsChoiceAndBreakdown) {
  const auto inv = testing::dgx_a100();
  const auto r = testing::whole_gpus(inv);
  const auto text = explain_preferred(config, inv, r, all_ids(r), {}, 2);
  EXPECT_THAT(text, HasSubstr("chosen: GPU-0 GPU-1"));
  EXPECT_THAT(text, HasSubstr("nvlink lanes 12, pcie points 5, same-numa pairs 1 (over 1 GPU pairs)"));
  EXPECT_THAT(text, HasSubstr("left free: 6 GPUs"));
  EXPECT_THAT(explain_preferred(config, inv, r, all_ids(r), {}, 9), HasSubstr("error: "));
}

}  // namespace
}  // namespace kgpu
