// `kgpu devices -o dra` with the real binary against the fake NVML: the ResourceSlices kgpu would
// publish for the node, as a v1 List.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "dra/device_names.h"
#include "e2e/harness.h"

namespace kgpu::test {
namespace {

struct CliRun {
  std::optional<int> rc;
  std::string out, err;
};

CliRun devices_dra(const std::string& fleet, const std::string& node_name) {
  TempDir work("kgpu-dra");
  const FakeNode node = make_fake_node(fleet, work.file("node"));
  ProcessOptions options;
  // The proc root holds the MIG capability minors: without them MIG devices are Unhealthy and unpublished.
  options.argv = {kgpu_binary(), "devices", "-o", "dra", "--sysfs-root", node.sysfs_root, "--proc-root", node.proc_root};
  options.env = fake_nvml_env(node);
  options.env["NODE_NAME"] = node_name;
  ChildProcess cli(options, work.path(), "devices");
  CliRun r;
  r.rc = cli.wait_exit(20s);
  r.out = cli.stdout_text();
  r.err = cli.stderr_text();
  return r;
}

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

TEST(DevicesDraE2E, InvalidNodeNameIsAClearError) {
  const CliRun r = devices_dra("dgx-a100.yaml", "Not_A_Node");
  EXPECT_EQ(r.rc, 1);
  EXPECT_NE(r.err.find("node name \"Not_A_Node\" is not a DNS subdomain"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace kgpu::test
