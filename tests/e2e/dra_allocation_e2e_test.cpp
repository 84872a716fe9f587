// End to end, issue 37: the slices the real `kgpu plugin --dra` publishes to the fake API server,
// allocated as kube-scheduler 1.34's allocator allocates (tests/deploy/dra-allocator, through
// e2e/dra_allocation.h) with the DeviceClasses kgpu ships and its example claims. Each test failed on
// the main of before the issue: a claim for a whole GPU got a 1Gi share of a shared GPU, a MIG node's
// slice was refused for a device over the API's attribute limit, and on Kubernetes 1.34 an
// informational (None) taint kept claims off a healthy device.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include <nlohmann/json.hpp>

#include "e2e/dra_allocation.h"
#include "e2e/dra_fixture.h"
#include "fake-nvml/fake_nvml_control.h"
#include "sim/dra_kubelet_sim.h"
#include "support/eventually.h"
#include "support/fake_api_server.h"

namespace kgpu::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class DraAllocationE2E : public DraSimE2E {
 protected:
  // The published device named `name` (any slice of the NVIDIA driver); null when absent.
  static nlohmann::json device(const FakeApiServer& api, const std::string& name) {
    for (const auto& [slice_name, slice] : api.slices())
      for (const auto& d : slice["spec"].value("devices", nlohmann::json::array()))
        if (d.value("name", "") == name) return d;
    return nullptr;
  }
  static std::string shared_device_name(const FakeApiServer& api) {
    for (const auto& [slice_name, slice] : api.slices())
      for (const auto& d : slice["spec"].value("devices", nlohmann::json::array()))
        if (d.value("allowMultipleAllocations", false)) return d.value("name", "");
    return "";
  }
};

// Item 1: with memory sharing on GPU 0, NVIDIA's gpu.nvidia.com claims (a two-GPU claim with an
// NVLink constraint, then one-GPU claims of >= 40Gi) get whole GPUs, never GPU 0 and never a share,
// until the seven whole GPUs are spent; gpu-share.kgpu.io claims of 10Gi all land on GPU 0 as
// shares. The two-GPU claim is then prepared by kgpu through the kubelet simulator.
TEST_F(DraAllocationE2E, ClaimsForWholeGpusGetWholeGpusAndOnlyShareClaimsGetShares) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  api.set_consumable_capacity(FakeApiServer::ConsumableCapacity::Served);
  auto plugin = start(share_options(api, "0,1,2,3,4,5,6,7", "0"));
  sim::DraKubeletSim kubelet(work.path(), 34);
  ASSERT_TRUE(kubelet.wait_for_plugin(20s)) << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return published(api).size() == 8 && !shared_device_name(api).empty(); }, 20s))
      << diagnostics(*plugin);
  const std::string shared = shared_device_name(api);
  EXPECT_EQ(device(api, shared)["attributes"]["type"]["string"], "gpu-share");

  std::vector<std::string> claims = {example_path("two-gpus-nvlink.yaml")};
  for (int i = 0; i < 6; ++i) claims.push_back(example_path("gpu-40gi.yaml"));
  for (int i = 0; i < 2; ++i) claims.push_back(example_path("gpu-memory-10gi.yaml"));
  const auto outcomes = allocate_claims(api, claims, work);
  ASSERT_EQ(outcomes.size(), claims.size());

  std::set<std::string> whole;
  for (size_t i = 0; i < 6; ++i) {
    ASSERT_TRUE(outcomes[i].allocated()) << i << ": " << outcomes[i].error;
    for (const auto& r : outcomes[i].allocation["devices"]["results"]) {
      EXPECT_FALSE(r.contains("shareID")) << i << ": a claim for a GPU got a share: " << r.dump();
      EXPECT_NE(r.value("device", ""), shared) << i;
      EXPECT_TRUE(whole.insert(r.value("device", "")).second) << i << ": " << r.dump() << " given twice";
    }
  }
  EXPECT_EQ(outcomes[0].devices().size(), 2u);
  EXPECT_EQ(whole.size(), 7u);
  EXPECT_FALSE(outcomes[6].allocated()) << "an eighth whole GPU: " << outcomes[6].allocation.dump();
  std::set<std::string> share_ids;
  for (size_t i = 7; i < 9; ++i) {
    ASSERT_TRUE(outcomes[i].allocated()) << i << ": " << outcomes[i].error;
    const auto& r = outcomes[i].allocation["devices"]["results"][0];
    EXPECT_EQ(r.value("device", ""), shared) << r.dump();
    EXPECT_EQ(r["consumedCapacity"]["memory"], "10Gi") << r.dump();
    share_ids.insert(r.value("shareID", ""));
  }
  EXPECT_EQ(share_ids.size(), 2u);

  // kgpu prepares what the scheduler allocated: the two-GPU claim gets both GPUs, whole.
  api.put_resource_claim(allocated_claim("uid-two", "two", outcomes[0].allocation));
  auto prepared = kubelet.prepare(kDraGpuDriver, {{"team-a", "two", "uid-two"}});
  ASSERT_TRUE(prepared) << prepared.error().message;
  EXPECT_EQ(prepared->at("uid-two").error, "") << diagnostics(*plugin);
  EXPECT_EQ(prepared->at("uid-two").devices.size(), 2u);
  EXPECT_TRUE(api.slice_rejections().empty());
}

// Item 2 (with item 4's MIG example): a node whose 7g.80gb MIG device sits under a PCIe root is
// published (the API server refused its whole slice when that device had 33 attributes and
// capacities), and deploy/examples/mig-1g10gb.yaml gets a 1g.10gb device.
TEST_F(DraAllocationE2E, AMigNodeWithTheLargestProfileIsPublishedAndTheMigExampleGetsItsProfile) {
  FakeApiServer api("node-1", {});
  auto options = dra_options(api, "0,1");
  options.fleet_file = "h100-mig-7g.yaml";
  auto plugin = start(options);
  ASSERT_TRUE(eventually([&] { return published(api).size() == 5; }, 20s))
      << diagnostics(*plugin) << "\nrejections: " << nlohmann::json(api.slice_rejections()).dump();
  EXPECT_TRUE(api.slice_rejections().empty());
  const auto outcomes = allocate_claims(api, {example_path("mig-1g10gb.yaml")}, work);
  ASSERT_EQ(outcomes.size(), 1u);
  ASSERT_TRUE(outcomes[0].allocated()) << outcomes[0].error;
  const auto d = device(api, outcomes[0].devices().at(0));
  EXPECT_EQ(d["attributes"]["profile"]["string"], "1g.10gb") << d.dump();
}

// Item 3: on Kubernetes 1.34 (the fake API server says so at GET /version) an XID the health policy
// ignores is not published as a None taint, which 1.34's scheduler would treat as NoSchedule: the
// GPU stays allocatable, while a GPU with an XID that matters is not.
TEST_F(DraAllocationE2E, OnKubernetes134AnIgnoredXidLeavesTheGpuAllocatable) {
  FakeApiServer api("node-1", {});
  api.set_device_taints(FakeApiServer::DeviceTaints::Served);
  api.set_kubernetes_minor(34);
  fake_nvml::Control control{work.file("nvml.control")};
  auto options = dra_options(api, "0,1");
  options.env["KGPU_FAKE_NVML_CONTROL"] = control.path();
  auto plugin = start(options);
  ASSERT_TRUE(eventually([&] { return published(api).size() == 2; }, 20s)) << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return plugin->stderr_text().find("health: watching") != std::string::npos; }, 20s))
      << diagnostics(*plugin);
  const auto uuids = published_uuids(api);
  const auto [busy, busy_uuid] = *uuids.begin();
  const auto [broken, broken_uuid] = *uuids.rbegin();
  ASSERT_TRUE(control.inject_xid(busy_uuid, 13));    // an application's error: ignored by the policy
  ASSERT_TRUE(control.inject_xid(broken_uuid, 79));  // fallen off the bus: unhealthy
  ASSERT_TRUE(eventually([&] { return device(api, broken).contains("taints"); }, 20s)) << diagnostics(*plugin);
  EXPECT_FALSE(device(api, busy).contains("taints")) << device(api, busy).dump();
  EXPECT_NE(plugin->stderr_text().find("is Kubernetes 1.34; before 1.35 the scheduler keeps pods off"), std::string::npos)
      << diagnostics(*plugin);
  const auto outcomes = allocate_claims(api, {example_path("gpu-40gi.yaml"), example_path("gpu-40gi.yaml")}, work);
  ASSERT_EQ(outcomes.size(), 2u);
  ASSERT_TRUE(outcomes[0].allocated()) << outcomes[0].error;
  EXPECT_EQ(outcomes[0].devices(), std::vector<std::string>{busy});
  EXPECT_FALSE(outcomes[1].allocated()) << "the tainted GPU was allocated: " << outcomes[1].allocation.dump();
}

}  // namespace
}  // namespace kgpu::test
