// dra_share / without_owned: which GPUs DRA serves (kgpu.dra.gpus) and what the device-plugin API
// keeps. A GPU is never in both; a bad entry costs only itself.
#include <gtest/gtest.h>

#include "dra/api_share.h"
#include "dra/model/device_names.h"
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

// Issue 28, item 1: holds outrank the configured split, each override named with both owners.
TEST(DraShare, ClaimsAndPodsKeepTheirGpusWhateverTheSplitSays) {
  const Inventory inv = testing::a100_node(4, 0);
  const std::vector<bool> configured{true, true, false, false};
  PreparedClaim c;
  c.ref = {"uid-1", "team-a", "train"};
  c.devices = {{{"gpu"}, "node-1", gpu_device_name(inv.gpus[2]), {}, std::nullopt, false, "", false}};
  PreparedClaim admin = c;
  admin.ref.uid = "uid-2";
  admin.devices[0].device = gpu_device_name(inv.gpus[3]);
  admin.devices[0].admin_access = true;  // looks at a device in use: holds nothing
  const auto claims = claim_holds(inv, {c, admin});
  ASSERT_EQ(claims, (std::vector<GpuHold>{{2, "claim team-a/train (uid-1)"}}));

  // Pods: an ID of the plan, and a replica ID of an earlier time-slicing config.
  Resource gpus{"nvidia.com/gpu", Vendor::Nvidia, SharingKind::None, 1, false, {}};
  gpus.devices.push_back({"0", true, {}, 0, std::nullopt, -1});
  const ResourcePlan plan{{gpus}, {}};
  const std::vector<podresources::ContainerDevices> pods{
      {"default", "a", "main", "nvidia.com/gpu", {"0"}},
      {"default", "b", "main", "nvidia.com/gpu", {inv.gpus[3].uuid + "::2"}},
      {"default", "c", "main", "nvidia.com/gpu", {"GPU-not-on-this-node"}}};
  const auto pods_hold = pod_holds(inv, plan, pods);
  ASSERT_EQ(pods_hold.size(), 2u);
  EXPECT_EQ(pods_hold[0], (GpuHold{0, "pod default/a (nvidia.com/gpu 0)"}));
  EXPECT_EQ(pods_hold[1].gpu, 3u);

  const auto owners = api_owners(inv, configured, claims, {pods_hold[0]});
  EXPECT_EQ(owners.owned, (std::vector<bool>{false, true, true, false}));
  ASSERT_EQ(owners.overrides.size(), 2u);
  EXPECT_EQ(owners.overrides[0], "GPU 0 (" + inv.gpus[0].uuid +
                                     ") stays with the device-plugin API while pod default/a (nvidia.com/gpu 0) holds "
                                     "it; the configuration gives it to DRA");
  EXPECT_EQ(owners.overrides[1], "GPU 2 (" + inv.gpus[2].uuid +
                                     ") stays with DRA while claim team-a/train (uid-1) holds it; the configuration "
                                     "gives it to the device-plugin API");
  // Held by both: the configuration decides, and the conflict is said.
  const auto both = api_owners(inv, configured, {{1, "claim x"}}, {{1, "pod y"}});
  EXPECT_EQ(both.owned, configured);
  ASSERT_EQ(both.overrides.size(), 1u);
  EXPECT_NE(both.overrides[0].find("is held by both claim x and pod y"), std::string::npos);
  // Nothing held: the configuration, silently.
  EXPECT_EQ(api_owners(inv, configured, {}, {}).overrides, std::vector<std::string>{});
}

// Issue 28, item 12: the slices do not offer hardware a claim holds under another device name.
TEST(DraShare, DevicesOnHardwareAClaimHoldsUnderAnotherNameAreNotPublished) {
  const Inventory inv = testing::a100_node(2, 1);  // GPU 0 in MIG mode, GPU 1 whole
  SliceOptions o;
  o.node_name = "node-1";
  std::vector<DriverPool> pools = build_publication(inv, o)->pools;
  const size_t before = pools[0].devices.size();
  PreparedClaim whole;  // prepared on GPU 0 as a full GPU before MIG mode came on
  whole.ref = {"uid-1", "team-a", "train"};
  whole.devices = {{{"gpu"}, "node-1", gpu_device_name(inv.gpus[0]), {}, std::nullopt, false, inv.gpus[0].uuid, true}};
  PreparedClaim slice;  // a MIG device of GPU 0 under its own name: no effect on its siblings
  slice.ref = {"uid-2", "team-a", "infer"};
  slice.devices = {{{"mig"}, "node-1", mig_device_name(inv.gpus[0], inv.gpus[0].mig_devices[0]), {}, std::nullopt,
                    false, inv.gpus[0].uuid, false}};
  auto hidden = hide_devices_held_elsewhere(pools, {slice});
  EXPECT_TRUE(hidden.empty());
  EXPECT_EQ(pools[0].devices.size(), before);
  hidden = hide_devices_held_elsewhere(pools, {whole});
  EXPECT_EQ(hidden.size(), 7u);
  EXPECT_EQ(pools[0].devices.size(), before - 7);
  EXPECT_NE(hidden[0].find("claim team-a/train (uid-1) holds its GPU as " + gpu_device_name(inv.gpus[0])),
            std::string::npos)
      << hidden[0];
  for (const auto& d : pools[0].devices) EXPECT_EQ(d.attribute("parentUUID"), nullptr) << d.name;
}

}  // namespace
}  // namespace kgpu::dra
