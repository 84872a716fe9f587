// End to end, issue 42 (publishing): `kgpu plugin --dra --dra-mig-dynamic` on an 8 x H100 node of the
// fake NVML publishes every GPU as its full device plus every MIG placement, consuming one counter
// set per GPU, in the counter layout the API server's version needs; the scheduler's allocation
// rules (tests/deploy/dra-allocator, through e2e/dra_allocation.h) then never give out overlapping
// placements, nor a placement and its whole GPU. GPUs that cannot be dynamic are published as
// without the key, and `kgpu devices -o dra` says why.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include <nlohmann/json.hpp>

#include "dra/model/slice_limits.h"
#include "e2e/dra_allocation.h"
#include "e2e/devices_dra_cli.h"
#include "e2e/dra_fixture.h"
#include "support/eventually.h"
#include "support/fake_api_server.h"

namespace kgpu::test {
namespace {

using namespace std::chrono_literals;

// hgx-h100.yaml's GPU 0.
const std::string kGpu0 = "GPU-3ceaaf30-8142-48ea-91d9-3080f9b439fc";

class DraDynamicMigE2E : public DraSimE2E {
 protected:
  PluginOptions dynamic_options(const FakeApiServer& api, const std::string& dynamic) {
    PluginOptions options = dra_options(api, "0,1,2,3,4,5,6,7");
    options.fleet_file = "hgx-h100.yaml";
    options.extra_args.insert(options.extra_args.end(), {"--dra-mig-dynamic", dynamic});
    return options;
  }
  static size_t counter_sets(const FakeApiServer& api) {
    size_t n = 0;
    for (const auto& [name, slice] : api.slices()) n += slice["spec"].value("sharedCounters", nlohmann::json::array()).size();
    return n;
  }
  // A claim file for one device of `klass` matching CEL `expression` (none: any).
  std::string claim_file(const std::string& name, const std::string& klass, const std::string& expression) {
    nlohmann::json request = {{"name", "r"}, {"exactly", {{"deviceClassName", klass}, {"count", 1}}}};
    if (!expression.empty())
      request["exactly"]["selectors"] = nlohmann::json::array({{{"cel", {{"expression", expression}}}}});
    nlohmann::json claim = {{"apiVersion", "resource.k8s.io/v1"},
                            {"kind", "ResourceClaim"},
                            {"metadata", {{"name", name}, {"namespace", "team-a"}}},
                            {"spec", {{"devices", {{"requests", nlohmann::json::array({request})}}}}}};
    return work.write(name + ".json", claim.dump());
  }
  std::string mig_claim(const std::string& name, const std::string& profile) {
    return claim_file(name, "mig.nvidia.com", "device.attributes['gpu.nvidia.com'].profile == '" + profile + "'");
  }
};

// Every GPU dynamic, Kubernetes 1.34 (combined layout): 8 x 19 devices and 8 counter sets, each set in
// the slice of the devices consuming it, all accepted; deploy/examples/mig-3g40gb-dynamic.yaml gets a
// 3g.40gb placement.
TEST_F(DraDynamicMigE2E, EveryPlacementOfEightH100sIsPublishedAndTheExampleGetsA3g40gb) {
  FakeApiServer api("node-1", {});
  api.set_kubernetes_minor(34);
  api.set_partitionable_devices(FakeApiServer::PartitionableDevices::Served);
  auto plugin = start(dynamic_options(api, "all"));
  ASSERT_TRUE(eventually([&] { return published(api).size() == 8u * 19u && counter_sets(api) == 8u; }, 20s))
      << diagnostics(*plugin) << "\nrejections: " << nlohmann::json(api.slice_rejections()).dump();
  EXPECT_TRUE(api.slice_rejections().empty());
  for (const auto& [name, slice] : api.slices()) {
    EXPECT_EQ(dra::slice_limit_violations(slice), std::vector<std::string>{}) << name;
    EXPECT_EQ(slice["spec"]["devices"].empty(), !slice["spec"].contains("sharedCounters")) << "combined: " << name;
  }
  EXPECT_TRUE(published(api).contains("gpu-7-mig-3g40gb-9-4"));
  EXPECT_TRUE(published(api).contains("gpu-7"));
  const auto outcomes = allocate_claims(api, {example_path("mig-3g40gb-dynamic.yaml")}, work);
  ASSERT_EQ(outcomes.size(), 1u);
  ASSERT_TRUE(outcomes[0].allocated()) << outcomes[0].error;
  EXPECT_EQ(outcomes[0].devices(), (std::vector<std::string>{"gpu-0-mig-3g40gb-9-0"}));
}

// GPU 0 dynamic, the others whole: 1g, 1g, 2g and 3g claims land on GPU 0 on disjoint memory
// slices; a fifth MIG claim and a claim for GPU 0 whole are refused by its counters. In a fresh
// allocation GPU 0 whole is given, and then no placement of it is.
TEST_F(DraDynamicMigE2E, PlacementsNeverOverlapAndTheWholeGpuExcludesThem) {
  FakeApiServer api("node-1", {});
  api.set_kubernetes_minor(34);
  api.set_partitionable_devices(FakeApiServer::PartitionableDevices::Served);
  auto plugin = start(dynamic_options(api, "0"));
  ASSERT_TRUE(eventually([&] { return published(api).size() == 7u + 19u && counter_sets(api) == 1u; }, 20s))
      << diagnostics(*plugin) << "\nrejections: " << nlohmann::json(api.slice_rejections()).dump();
  const std::string whole0 = claim_file("whole0", "gpu.nvidia.com", "device.attributes['gpu.nvidia.com'].uuid == '" + kGpu0 + "'");
  const auto outcomes = allocate_claims(api,
                                        {mig_claim("a", "1g.10gb"), mig_claim("b", "1g.10gb"), mig_claim("c", "2g.20gb"),
                                         mig_claim("d", "3g.40gb"), mig_claim("e", "1g.10gb"), whole0},
                                        work);
  ASSERT_EQ(outcomes.size(), 6u);
  std::vector<std::string> got;
  for (size_t i = 0; i < 4; ++i) {
    ASSERT_TRUE(outcomes[i].allocated()) << i << ": " << outcomes[i].error;
    got.push_back(outcomes[i].devices().at(0));
  }
  EXPECT_EQ(got, (std::vector<std::string>{"gpu-0-mig-1g10gb-19-0", "gpu-0-mig-1g10gb-19-1", "gpu-0-mig-2g20gb-14-2",
                                           "gpu-0-mig-3g40gb-9-4"}));
  EXPECT_FALSE(outcomes[4].allocated()) << "a fifth placement: " << outcomes[4].allocation.dump();
  EXPECT_FALSE(outcomes[5].allocated()) << "GPU 0 whole under four placements: " << outcomes[5].allocation.dump();

  const auto fresh = allocate_claims(api, {whole0, mig_claim("f", "1g.10gb"), mig_claim("g", "7g.80gb")}, work);
  ASSERT_EQ(fresh.size(), 3u);
  ASSERT_TRUE(fresh[0].allocated()) << fresh[0].error;
  EXPECT_EQ(fresh[0].devices(), (std::vector<std::string>{"gpu-0"}));
  EXPECT_FALSE(fresh[1].allocated()) << fresh[1].allocation.dump();
  EXPECT_FALSE(fresh[2].allocated()) << fresh[2].allocation.dump();
  EXPECT_TRUE(api.slice_rejections().empty());
}

// Kubernetes 1.35 refuses a slice holding counter sets and devices: the counter sets go out in
// slices of their own (the fake API server holds kgpu to that rule).
TEST_F(DraDynamicMigE2E, OnKubernetes135CounterSetsHaveSlicesOfTheirOwn) {
  FakeApiServer api("node-1", {});
  api.set_kubernetes_minor(35);
  api.set_partitionable_devices(FakeApiServer::PartitionableDevices::Served);
  auto plugin = start(dynamic_options(api, "all"));
  ASSERT_TRUE(eventually([&] { return published(api).size() == 8u * 19u && counter_sets(api) == 8u; }, 20s))
      << diagnostics(*plugin) << "\nrejections: " << nlohmann::json(api.slice_rejections()).dump();
  EXPECT_TRUE(api.slice_rejections().empty());
  size_t counter_slices = 0;
  for (const auto& [name, slice] : api.slices()) {
    EXPECT_EQ(dra::slice_limit_violations(slice), std::vector<std::string>{}) << name;
    if (!slice["spec"].contains("sharedCounters")) continue;
    ++counter_slices;
    EXPECT_TRUE(slice["spec"].value("devices", nlohmann::json::array()).empty()) << name;
  }
  EXPECT_EQ(counter_slices, 4u);
}

// An API server that drops shared counters (DRAPartitionableDevices off) would let the scheduler
// hand out overlapping placements: kgpu publishes each dynamic GPU whole instead, and says so.
TEST_F(DraDynamicMigE2E, WithoutSharedCountersTheGpusGoOutWhole) {
  FakeApiServer api("node-1", {});
  api.set_kubernetes_minor(34);
  api.set_partitionable_devices(FakeApiServer::PartitionableDevices::Stripped);
  auto plugin = start(dynamic_options(api, "all"));
  const std::set<std::string> whole = {"gpu-0", "gpu-1", "gpu-2", "gpu-3", "gpu-4", "gpu-5", "gpu-6", "gpu-7"};
  ASSERT_TRUE(eventually([&] { return published(api) == whole; }, 20s))
      << diagnostics(*plugin) << "\npublished: " << nlohmann::json(published(api)).dump();
  EXPECT_TRUE(eventually([&] { return plugin->stderr_text().find("without MIG placements") != std::string::npos; }, 5s))
      << diagnostics(*plugin);
}

// `kgpu devices -o dra` shows the dynamic layout: devices, counter sets, and which GPU.
TEST(DevicesDraDynamicMigE2E, ShowsTheDynamicLayout) {
  const CliRun r = devices_dra("hgx-h100.yaml", "worker-7", {"--dra-mig-dynamic", "0,1"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto list = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(list.is_discarded()) << r.out;
  size_t devices = 0, sets = 0;
  for (const auto& slice : list["items"]) {
    EXPECT_EQ(dra::slice_limit_violations(slice), std::vector<std::string>{});
    devices += slice["spec"]["devices"].size();
    sets += slice["spec"].value("sharedCounters", nlohmann::json::array()).size();
  }
  EXPECT_EQ(devices, 6u + 2u * 19u);
  EXPECT_EQ(sets, 2u);
  EXPECT_NE(r.err.find(kGpu0 + ": dynamic MIG (kgpu.dra.mig.dynamic): 19 devices"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("counter set gpu-0-counter-set"), std::string::npos) << r.err;
}

// A100s: MIG off cannot be dynamic (a reset would be needed), MIG devices an operator made keep
// their GPU static; each GPU is published as without the key and the warning says why.
TEST(DevicesDraDynamicMigE2E, SaysWhyAGpuIsNotDynamic) {
  const CliRun r = devices_dra("a100-mig-mixed.yaml", "worker-7", {"--dra-mig-dynamic", "all"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto list = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(list.is_discarded()) << r.out;
  ASSERT_EQ(list["items"].size(), 1u) << r.out;
  EXPECT_EQ(list["items"][0]["spec"]["devices"].size(), 15u) << "as without the key";
  EXPECT_FALSE(list["items"][0]["spec"].contains("sharedCounters"));
  EXPECT_NE(r.err.find("GPU 3 ("), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("MIG mode is off"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("MIG instances kgpu did not create"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kgpu::test
