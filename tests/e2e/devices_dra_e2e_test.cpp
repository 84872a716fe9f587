// `kgpu devices -o dra` with the real binary against the fake NVML: the ResourceSlices kgpu would
// publish for the node, as a v1 List.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <iterator>

#include "dra/model/device_names.h"
#include "dra/model/slice_limits.h"
#include "e2e/devices_dra_cli.h"
#include "e2e/harness.h"

namespace kgpu::test {
namespace {

TEST(DevicesDraE2E, PrintsTheSlicesOfTheNodesPool) {
  const CliRun r = devices_dra("a100-mig-mixed.yaml", "worker-7");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto list = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(list.is_discarded()) << r.out;
  EXPECT_EQ(list["kind"], "List");
  ASSERT_EQ(list["items"].size(), 1u) << r.out;
  const auto& slice = list["items"][0];
  EXPECT_EQ(slice["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(slice["kind"], "ResourceSlice");
  EXPECT_EQ(slice["spec"]["driver"], "gpu.nvidia.com");
  EXPECT_EQ(slice["spec"]["nodeName"], "worker-7");
  EXPECT_EQ(slice["spec"]["pool"]["name"], "worker-7");
  // Three GPUs in MIG mode with 3 + 7 + 4 MIG devices, and one full GPU.
  const auto& devices = slice["spec"]["devices"];
  ASSERT_EQ(devices.size(), 15u);
  size_t mig = 0;
  for (const auto& d : devices) {
    EXPECT_TRUE(dra::is_dns_label(d["name"].get<std::string>())) << d["name"];
    mig += d["attributes"]["type"]["string"] == "mig";
  }
  EXPECT_EQ(mig, 14u);
}

// Issue 37, item 2: a 7g MIG device under a PCIe root had 33 attributes and capacities, one over the
// API's limit, and the API server refused the node's whole slice. Every slice kgpu prints keeps the
// limits, and the 7g device keeps NVIDIA's attributes (pcieRoot, memorySlice0..7).
TEST(DevicesDraE2E, TheLargestMigDeviceKeepsTheApiLimits) {
  const CliRun r = devices_dra("h100-mig-7g.yaml", "worker-7");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto list = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(list.is_discarded()) << r.out;
  bool seven = false;
  for (const auto& slice : list["items"]) {
    EXPECT_EQ(dra::slice_limit_violations(slice), std::vector<std::string>{});
    for (const auto& d : slice["spec"]["devices"]) {
      if (d["attributes"].value("profile", nlohmann::json::object()).value("string", "") != "7g.80gb") continue;
      seven = true;
      EXPECT_LE(d["attributes"].size() + d["capacity"].size(), 32u) << d.dump();
      EXPECT_TRUE(d["attributes"].contains("resource.kubernetes.io/pcieRoot")) << d.dump();
      EXPECT_TRUE(d["capacity"].contains("memorySlice7")) << d.dump();
    }
  }
  EXPECT_TRUE(seven) << r.out;
  EXPECT_NE(r.err.find("over the API's 32 per device; left out kgpu's"), std::string::npos) << r.err;
}

// Issue 37, item 4: a GPU lost before kgpu started is published with its gpu-lost taint (named from
// the driver's procfs entry), as the docs promise, not left out without a word.
TEST(DevicesDraE2E, AGpuLostAtStartIsPublishedWithItsGpuLostTaint) {
  TempDir dir("kgpu-lost-fleet");
  {
    std::ifstream in(fleet_path("dgx-a100.yaml"));
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // GPU 3 lost: every NVML call about it answers GPU_IS_LOST, its UUID too.
    const size_t at = text.find("{index: 3, ");
    ASSERT_NE(at, std::string::npos);
    text.insert(at + 1, "lost: true, ");
    dir.write("fleet.yaml", text);
  }
  const CliRun r = devices_dra(dir.file("fleet.yaml"), "worker-7");
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto list = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(list.is_discarded()) << r.out;
  size_t devices = 0;
  std::string lost_taints;
  for (const auto& slice : list["items"])
    for (const auto& d : slice["spec"]["devices"]) {
      ++devices;
      if (d["name"] == "gpu-3") lost_taints = d.value("taints", nlohmann::json::array()).dump();
    }
  EXPECT_EQ(devices, 8u) << r.out;
  EXPECT_NE(lost_taints.find("\"key\":\"gpu.nvidia.com/gpu-lost\""), std::string::npos) << lost_taints;
  EXPECT_NE(lost_taints.find("NoSchedule"), std::string::npos) << lost_taints;
}

TEST(DevicesDraE2E, InvalidNodeNameIsAClearError) {
  const CliRun r = devices_dra("dgx-a100.yaml", "Not_A_Node");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("node name \"Not_A_Node\" is not a DNS subdomain"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kgpu::test
