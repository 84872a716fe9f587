// End to end: under a per-node config (the Node label picks one of the mounted configs), every CLI
// subcommand that shows configuration sees the same choice as the running daemon and says where
// it came from, instead of the default config and "(flag --config-file)".
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "e2e/sim_fixture.h"
#include "support/fake_api_server.h"

namespace kgpu::test {
namespace {

using namespace std::chrono_literals;

const std::string kGpu = "nvidia.com/gpu";
const std::string kLabel = "nvidia.com/device-plugin.config";

class CliNodeConfigE2E : public SimE2E {
 protected:
  void SetUp() override {
    SimE2E::SetUp();
    dir = work.file("available-configs");
    work.write("available-configs/default", "version: v1\n");
    work.write("available-configs/big", R"(version: v1
sharing:
  timeSlicing:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
)");
  }

  // The environment the chart gives the daemon and `kubectl exec` inherits.
  std::map<std::string, std::string> node_env(const FakeApiServer& api) const {
    return {{"NODE_NAME", "gpu-node-1"},   {"KGPU_CONFIG_DIR", dir},   {"KGPU_CONFIG_DEFAULT", "default"},
            {"KGPU_NODE_CONFIG_LABEL", kLabel}, {"KGPU_KUBE_API", api.url()}, {"CONFIG_FILE", dir + "/default"}};
  }

  // Runs `kgpu <args...>` on the same fake node with `env`; returns its stdout (fails the test on a
  // non-zero exit).
  std::string run_cli(std::vector<std::string> args, const std::map<std::string, std::string>& env,
                      const std::string& name) {
    ProcessOptions p;
    p.argv = {kgpu_binary()};
    p.argv.insert(p.argv.end(), args.begin(), args.end());
    p.env = fake_nvml_env(make_fake_node("dgx-a100.yaml", work.file(name + "-node")));
    for (const auto& [k, v] : env) p.env[k] = v;
    ChildProcess cli(p, work.path(), name);
    auto rc = cli.wait_exit(30s);
    EXPECT_EQ(rc, 0) << name << " stderr:\n" << cli.stderr_text();
    return cli.stdout_text();
  }

  std::string dir;
};

TEST_F(CliNodeConfigE2E, DevicesLiveAndPrintConfigShowTheNodeLabelsChoice) {
  FakeApiServer api("gpu-node-1", {{kLabel, "big"}});
  PluginOptions options;
  options.env = node_env(api);
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 32)) << diagnostics(*plugin);  // the daemon serves "big": 8 x 4

  // `kgpu devices --live -o json` in the daemon's pod: the same 32 devices, all served.
  std::string out = run_cli({"devices", "--live", "-o", "json", "--kubelet-socket", plugin_dir + "/kubelet.sock"},
                            node_env(api), "devices");
  auto j = nlohmann::json::parse(out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << out;
  ASSERT_TRUE(j.contains("resources")) << out;
  size_t gpu_devices = 0;
  for (const auto& r : j["resources"])
    if (r.value("name", "") == kGpu) gpu_devices = r["devices"].size();
  EXPECT_EQ(gpu_devices, 32u) << out;
  EXPECT_EQ(j["config"]["file"], dir + "/big") << out;
  EXPECT_NE(j["config"]["origin"].get<std::string>().find(kLabel + "=big"), std::string::npos) << out;
  EXPECT_EQ(out.find("not being served"), std::string::npos) << out;

  // Text output names the file and its origin too.
  std::string text = run_cli({"devices"}, node_env(api), "devices-text");
  EXPECT_NE(text.find("Config: " + dir + "/big (Node label of node gpu-node-1: " + kLabel + "=big)"),
            std::string::npos)
      << text;

  // `kgpu plugin --print-config`: the Node label is the origin, not "flag --config-file".
  std::string printed = run_cli({"plugin", "--print-config"}, node_env(api), "print-config");
  EXPECT_NE(printed.find(dir + "/big"), std::string::npos) << printed;
  EXPECT_NE(printed.find("Node label of node gpu-node-1: " + kLabel + "=big"), std::string::npos) << printed;
  EXPECT_EQ(printed.find("flag --config-file"), std::string::npos) << printed;

  // Without the per-node environment the CLI still reports plain flags as before.
  std::string plain = run_cli({"plugin", "--print-config", "--config-file", dir + "/big"}, {}, "print-config-flag");
  EXPECT_NE(plain.find("flag --config-file"), std::string::npos) << plain;
}

TEST_F(CliNodeConfigE2E, ANodeWithoutTheLabelShowsTheDefaultAndSaysWhy) {
  FakeApiServer api("gpu-node-1", {});
  std::string text = run_cli({"devices"}, node_env(api), "devices-default");
  EXPECT_NE(text.find("Config: " + dir + "/default (Node label of node gpu-node-1: node gpu-node-1 has no " + kLabel +
                      " label; using the default config \"default\")"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace kgpu::test
