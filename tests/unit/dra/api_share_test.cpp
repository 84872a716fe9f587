// dra_share / without_owned: which GPUs DRA serves (kgpu.dra.gpus) and what the device-plugin API
// keeps. A GPU is never in both; a bad entry costs only itself.
#include <gtest/gtest.h>

#include "dra/api_share.h"
#include "unit/dra/synthetic_node.h"

namespace kgpu::dra {
namespace {

Inventory node_with_an_amd_gpu() {
  Inventory inv = testing::a100_node(4, 1);
  Gpu amd;
  amd.vendor = Vendor::Amd;
  amd.index = 4;
  amd.uuid = "amd-0";
  inv.gpus.push_back(amd);
  return inv;
}

// One resource per GPU kind, each device naming its GPU position.
DraConfig nvidia_gpus(std::vector<std::string> gpus) {
  DraConfig dra;
  dra.enabled = true;
  dra.gpus = std::move(gpus);
  return dra;
}

ResourcePlan plan_of(const Inventory& inv) {
  ResourcePlan plan;
  Resource nvidia, amd, group;
  nvidia.name = "nvidia.com/gpu";
  amd.name = "amd.com/gpu";
  amd.vendor = Vendor::Amd;
  group.name = "example.com/nic";
  for (size_t i = 0; i < inv.gpus.size(); ++i) {
    AdvertisedDevice d;
    d.id = inv.gpus[i].uuid;
    d.gpu = i;
    (inv.gpus[i].vendor == Vendor::Amd ? amd : nvidia).devices.push_back(d);
  }
  plan.resources = {nvidia, amd, group};
  plan.problems = {"a problem the planner found"};
  return plan;
}

TEST(DraShare, EmptySelectionOwnsEveryNvidiaGpuAndNoOther) {
  const auto share = dra_share(node_with_an_amd_gpu(), nvidia_gpus({}));
  EXPECT_EQ(share.owned, (std::vector<bool>{true, true, true, true, false}));
  EXPECT_TRUE(share.unmatched.empty());
}

TEST(DraShare, EntriesByIndexAndUuid) {
  const auto share = dra_share(node_with_an_amd_gpu(), nvidia_gpus({"1", "GPU-00000000-0000-4000-8000-000000000003"}));
  EXPECT_EQ(share.owned, (std::vector<bool>{false, true, false, true, false}));
  EXPECT_TRUE(share.unmatched.empty());
}

TEST(DraShare, AnEntryNamingNoGpuIsReportedAndTheOthersStillApply) {
  // "7": a GPU that fell off the bus; "amd-0" and "4": the AMD GPU, which DRA never serves.
  const auto share = dra_share(node_with_an_amd_gpu(), nvidia_gpus({"2", "7", "GPU-typo", "amd-0", "4"}));
  EXPECT_EQ(share.owned, (std::vector<bool>{false, false, true, false, false}));
  EXPECT_EQ(share.unmatched, (std::vector<std::string>{"7", "GPU-typo", "amd-0", "4"}));
}

TEST(DraShare, AmdAndIntelGpusAreOwnedWholeWhenTheirVendorIsListed) {
  auto dra = nvidia_gpus({"1"});
  dra.vendors = {"amd", "nvidia"};
  EXPECT_EQ(dra_share(node_with_an_amd_gpu(), dra).owned, (std::vector<bool>{false, true, false, false, true}));
  dra = nvidia_gpus({});
  dra.vendors = {"amd"};
  EXPECT_EQ(dra_share(node_with_an_amd_gpu(), dra).owned, (std::vector<bool>{false, false, false, false, true}));
  dra.vendors = {"intel"};
  EXPECT_EQ(dra_share(node_with_an_amd_gpu(), dra).owned, std::vector<bool>(5, false));
}

TEST(DraShare, ServedPoolsKeepOwnedGpusWithTheirMigDevicesOfServedDriversOnly) {
  const Inventory inv = node_with_an_amd_gpu();  // GPU 0 in MIG mode (seven devices)
  SliceOptions options;
  options.node_name = "node-1";
  auto publication = build_publication(inv, options);
  ASSERT_TRUE(publication.ok()) << publication.error().message;
  ASSERT_EQ(publication->pools.size(), 2u);  // gpu.nvidia.com and gpu.amd.com
  auto dra = nvidia_gpus({"0", "3"});
  const auto pools = served_pools(publication->pools, inv, dra, dra_share(inv, dra).owned);
  ASSERT_EQ(pools.size(), 1u);
  EXPECT_EQ(pools[0].driver, "gpu.nvidia.com");
  std::vector<std::string> names;
  for (const auto& d : pools[0].devices) names.push_back(d.name);
  ASSERT_EQ(names.size(), 8u) << ::testing::PrintToString(names);  // 7 MIG devices of GPU 0, and GPU 3
  EXPECT_EQ(names.back(), "gpu-3");
  dra.vendors = {"amd"};
  dra.gpus.clear();
  const auto amd = served_pools(publication->pools, inv, dra, dra_share(inv, dra).owned);
  ASSERT_EQ(amd.size(), 1u);
  EXPECT_EQ(amd[0].driver, "gpu.amd.com");
  EXPECT_EQ(amd[0].devices.size(), 1u);
  EXPECT_EQ(served_drivers(dra), std::vector<std::string>{"gpu.amd.com"});
  dra.vendors = {"intel", "nvidia", "amd"};
  dra.driver = "n.example.com";
  dra.amd_driver = "a.example.com";
  dra.intel_driver = "i.example.com";
  EXPECT_EQ(served_drivers(dra), (std::vector<std::string>{"n.example.com", "a.example.com", "i.example.com"}));
  EXPECT_EQ(driver_names(dra), (DriverNames{"n.example.com", "a.example.com", "i.example.com"}));
}

TEST(DraShare, WithoutOwnedKeepsTheRestAndEmptyResourcesThatNeverHadDevices) {
  const Inventory inv = node_with_an_amd_gpu();
  const auto share = dra_share(inv, nvidia_gpus({"0", "1", "2", "3"}));
  const ResourcePlan kept = without_owned(plan_of(inv), share.owned);
  ASSERT_EQ(kept.resources.size(), 2u);  // nvidia.com/gpu lost every device and goes
  EXPECT_EQ(kept.resources[0].name, "amd.com/gpu");
  EXPECT_EQ(kept.resources[0].devices.size(), 1u);
  EXPECT_EQ(kept.resources[1].name, "example.com/nic");
  EXPECT_EQ(kept.problems, plan_of(inv).problems);
}

TEST(DraShare, NoGpuInBothApis) {
  const Inventory inv = node_with_an_amd_gpu();
  std::vector<DraConfig> configs;
  for (const std::vector<std::string>& selection :
       {std::vector<std::string>{}, {"0"}, {"1", "3"}, {"9"}, {"GPU-00000000-0000-4000-8000-000000000002", "0"}})
    for (const std::vector<std::string>& vendors : {std::vector<std::string>{"nvidia"}, {"nvidia", "amd"}}) {
      configs.push_back(nvidia_gpus(selection));
      configs.back().vendors = vendors;
    }
  configs.push_back(nvidia_gpus({}));
  configs.back().vendors = {"amd"};
  for (const auto& dra : configs) {
    const auto share = dra_share(inv, dra);
    const ResourcePlan kept = without_owned(plan_of(inv), share.owned);
    for (const auto& r : kept.resources)
      for (const auto& d : r.devices) EXPECT_FALSE(share.owned[d.gpu]) << d.id << " is served by both APIs";
    size_t served = 0;
    for (const auto& r : kept.resources) served += r.devices.size();
    size_t owned = 0;
    for (bool o : share.owned) owned += o;
    EXPECT_EQ(served + owned, inv.gpus.size());  // and none by neither
  }
}

}  // namespace
}  // namespace kgpu::dra
