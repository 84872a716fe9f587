// End to end: a config switch that renames a GPU's device IDs while a pod holds it. The kubelet
// only knows the old ID is taken; kgpu reads the kubelet's PodResources API (served here by the
// kubelet simulator) and keeps every new ID of that GPU Unhealthy until the pod is gone, so the
// kubelet cannot hand the GPU out again.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "e2e/sim_fixture.h"

namespace kgpu::test {
namespace {

using namespace std::chrono_literals;

const std::string kGpu = "nvidia.com/gpu";

// Replaces a file the way ConfigMap updates do: write a new file, rename it over.
void replace_file(const std::string& path, const std::string& content) {
  std::string tmp = path + ".new";
  std::ofstream(tmp) << content;
  std::filesystem::rename(tmp, path);
}

class HeldGpusE2E : public SimE2E {};

TEST_F(HeldGpusE2E, AGpuAPodHoldsStaysUnhealthyAfterAConfigSwitchUntilThePodIsGone) {
  std::string config = work.write("config/config.yaml", "version: v1\n");
  PluginOptions options;
  options.config_file = config;
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);

  // A running pod got the third GPU, whole.
  const std::string held = sim->snapshot().find(kGpu)->device_ids()[2];
  ASSERT_TRUE(sim->run_pod("default", "trainer", kGpu, {held}).ok());

  // Time-slicing: every GPU becomes 4 new IDs. The held GPU's 4 are advertised Unhealthy.
  replace_file(config, R"(version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
)");
  ASSERT_TRUE(wait_healthy(kGpu, 28, 1, 32)) << diagnostics(*plugin);
  const auto snapshot = sim->snapshot();
  for (const auto& d : snapshot.find(kGpu)->devices)
    EXPECT_EQ(d.health, d.id.rfind(held + "::", 0) == 0 ? "Unhealthy" : "Healthy") << d.id;
  EXPECT_NE(plugin->stderr_text().find("still held by pod default/trainer as nvidia.com/gpu " + held),
            std::string::npos)
      << diagnostics(*plugin);

  // `kgpu devices --live` names the pod and the ID it holds.
  ProcessOptions devices;
  devices.argv = {kgpu_binary(), "devices", "--live", "--config-file", config, "--kubelet-socket",
                  plugin_dir + "/kubelet.sock"};
  devices.env = fake_nvml_env(make_fake_node("dgx-a100.yaml", work.file("devices-node")));
  ChildProcess cli(devices, work.path(), "devices");
  ASSERT_EQ(cli.wait_exit(30s), 0) << cli.stderr_text();
  std::string out = cli.stdout_text();
  EXPECT_NE(out.find("held: pod default/trainer holds nvidia.com/gpu " + held), std::string::npos) << out;
  EXPECT_NE(out.find(held + "::0  Unhealthy"), std::string::npos) << out;

  // The pod ends: the GPU comes back without any other change.
  sim->delete_pod("default", "trainer");
  ASSERT_TRUE(wait_healthy(kGpu, 32, 1, 32)) << diagnostics(*plugin);
  EXPECT_NE(plugin->stderr_text().find("released: pod default/trainer"), std::string::npos) << diagnostics(*plugin);
  EXPECT_EQ(sim->snapshot().find(kGpu)->registrations, 1);
}

}  // namespace
}  // namespace kgpu::test
