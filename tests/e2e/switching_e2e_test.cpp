// End to end, issue 30: switching from NVIDIA's device plugin without surprises. NVIDIA's flags and
// environment variables for IMEX, a bad DP_DISABLE_HEALTHCHECKS entry, and NVML under the container
// driver root behave as they do for NVIDIA's plugin, and an operator's tools say what they see.
#include <gtest/gtest.h>

#include <filesystem>

#include "e2e/sim_fixture.h"

namespace kgpu::test {
namespace {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

const std::string kGpu = "nvidia.com/gpu";
const std::string kChannel = "/dev/nvidia-caps-imex-channels/channel0";

struct CliRun {
  int rc = -1;
  std::string out, err;
};

class SwitchingE2E : public SimE2E {
 protected:
  // Runs `kgpu <args...>` on a fake DGX node (fake NVML through LD_LIBRARY_PATH unless `env`
  // overrides it) and returns its exit code and output.
  CliRun run_cli(std::vector<std::string> args, const std::map<std::string, std::string>& env,
                 const std::string& name) {
    ProcessOptions p;
    p.argv = {kgpu_binary()};
    p.argv.insert(p.argv.end(), args.begin(), args.end());
    p.env = fake_nvml_env(make_fake_node("dgx-a100.yaml", work.file(name + "-node")));
    for (const auto& [k, v] : env) p.env[k] = v;
    ChildProcess cli(p, work.path(), name);
    auto rc = cli.wait_exit(30s);
    return {rc.value_or(-1), cli.stdout_text(), cli.stderr_text()};
  }

  // The device root of the fake node start() generates for the plugin named "plugin", holding the
  // IMEX channel node: a link to /dev/null, which stat() sees as the character device NVIDIA's
  // plugin requires (creating a real node would need CAP_MKNOD).
  std::string dev_root_with_channel() {
    const std::string root = work.file("node-plugin");
    fs::create_directories(root + "/dev/nvidia-caps-imex-channels");
    fs::create_symlink("/dev/null", root + kChannel);
    return root;
  }
};

// ---- item 2: IMEX channels, as NVIDIA's plugin hands them out ----

TEST_F(SwitchingE2E, ImexChannelFlagsGiveEveryContainerTheChannel) {
  const std::string root = dev_root_with_channel();
  PluginOptions options;
  options.extra_args = {"--imex-channel-ids", "0", "--imex-required", "--pass-device-specs",
                        "--device-list-strategy", "envvar,volume-mounts"};
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  auto ids = sim->snapshot().find(kGpu)->device_ids();
  auto edits = sim->allocate(kGpu, {ids[0]});
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  // volume-mounts overrides NVIDIA_VISIBLE_DEVICES; the channel's env stays (envvar is on too).
  EXPECT_EQ(edits->envs["NVIDIA_IMEX_CHANNELS"], "0");
  bool marker = false;
  for (const auto& m : edits->mounts) marker = marker || m.container_path == "/var/run/nvidia-container-devices/imex/0";
  EXPECT_TRUE(marker) << "no volume-mount marker for the channel";
  bool node = false;
  for (const auto& d : edits->devices)
    if (d.container_path == kChannel) node = d.host_path == root + kChannel && d.permissions == "rw";
  EXPECT_TRUE(node) << "no device spec for " << kChannel;
}

TEST_F(SwitchingE2E, ImexChannelFromTheEnvironmentNamesTheCdiDevice) {
  dev_root_with_channel();
  PluginOptions options;
  options.extra_args = {"--device-list-strategy", "cdi-cri", "--cdi-spec-dir", work.file("cdi")};
  options.env["IMEX_CHANNEL_IDS"] = "0";
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  auto ids = sim->snapshot().find(kGpu)->device_ids();
  auto edits = sim->allocate(kGpu, {ids[1]});
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  ASSERT_EQ(edits->cdi_devices.size(), 2u);
  EXPECT_EQ(edits->cdi_devices[1], "k8s.device-plugin.nvidia.com/imex-channel=0");
  // ... and the spec the runtime resolves that name with.
  const std::string spec = work.file("cdi/kgpu-k8s.device-plugin.nvidia.com-imex-channel.json");
  ASSERT_TRUE(wait_until([&] { return path_exists(spec); }, 20s)) << diagnostics(*plugin);
  const std::string text = read_file(spec);
  EXPECT_NE(text.find("\"kind\": \"k8s.device-plugin.nvidia.com/imex-channel\""), std::string::npos) << text;
  EXPECT_NE(text.find(kChannel), std::string::npos) << text;
}

TEST_F(SwitchingE2E, MissingRequiredImexChannelStopsTheStartWithoutItAWarning) {
  PluginOptions required;
  required.name = "required";
  required.env = {{"IMEX_CHANNEL_IDS", "0"}, {"IMEX_REQUIRED", "true"}};
  auto plugin = start(required);
  ASSERT_EQ(plugin->wait_exit(20s), 1) << plugin->stderr_text();
  EXPECT_NE(plugin->stderr_text().find("IMEX channel 0 is required"), std::string::npos) << plugin->stderr_text();

  PluginOptions optional;
  optional.name = "optional";
  optional.extra_args = {"--imex-channel-ids", "0"};
  auto served = start(optional);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*served);
  EXPECT_NE(served->stderr_text().find("IMEX channel 0 not found"), std::string::npos) << served->stderr_text();
  auto ids = sim->snapshot().find(kGpu)->device_ids();
  auto edits = sim->allocate(kGpu, {ids[0]});
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  EXPECT_EQ(edits->envs.count("NVIDIA_IMEX_CHANNELS"), 0u);
}

TEST_F(SwitchingE2E, ImexChannelIdsOtherThanZeroAreRefusedLikeNvidia) {
  auto run = run_cli({"plugin", "--print-config", "--imex-channel-ids", "1,2"}, {}, "imex-bad");
  EXPECT_EQ(run.rc, 1) << run.err;
  EXPECT_NE(run.err.find("flag --imex-channel-ids: error: imex.channelIDs must be [] or [0]; found [1 2]"),
            std::string::npos)
      << run.err;
}

// ---- item 3: a bad DP_DISABLE_HEALTHCHECKS entry is skipped, the rest applies ----

TEST_F(SwitchingE2E, BadHealthCheckEntryIsWarnedAndTheRestApplies) {
  auto run = run_cli({"plugin", "--print-config"}, {{"DP_DISABLE_HEALTHCHECKS", "79,gpu"}}, "health-env");
  ASSERT_EQ(run.rc, 0) << run.err;
  EXPECT_NE(run.err.find("'gpu' is neither 'all', 'xids' nor an XID number; skipped"), std::string::npos) << run.err;
  EXPECT_NE(run.out.find("kgpu.health.ignoredXids"), std::string::npos);
  EXPECT_NE(run.out.find("109, 79]  (env DP_DISABLE_HEALTHCHECKS)"), std::string::npos) << run.out;
}

// ---- item 4: NVML under the container driver root ----

TEST_F(SwitchingE2E, NvmlIsFoundUnderTheContainerDriverRootFirst) {
  const std::string root = work.file("driver-root");
  fs::create_directories(root + "/usr/lib64");
  fs::create_symlink(fake_nvml_dir() + "/libnvidia-ml.so.1", root + "/usr/lib64/libnvidia-ml.so.1");
  // No NVML through the loader's path: only the container driver root has one.
  auto run = run_cli({"devices", "--container-driver-root", root},
                     {{"LD_LIBRARY_PATH", work.file("no-nvml-here")}}, "driver-root");
  ASSERT_EQ(run.rc, 0) << run.err;
  EXPECT_NE(run.out.find("NVML: " + root + "/usr/lib64/libnvidia-ml.so.1\n"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("GPUs: 8"), std::string::npos) << run.out;

  // Without it, the error names the container root's paths too.
  auto missing = run_cli({"devices", "--container-driver-root", work.file("empty"), "--fail-on-init-error"},
                         {{"LD_LIBRARY_PATH", work.file("no-nvml-here")}}, "no-driver-root");
  EXPECT_NE(missing.rc, 0);
  EXPECT_NE(missing.err.find(work.file("empty") + "/usr/lib64/libnvidia-ml.so.1 (not present)"), std::string::npos)
      << missing.err;
}

// ---- item 7: the start-up log shows the effective configuration ----

TEST_F(SwitchingE2E, StartupLogsEveryNonDefaultSettingWithItsOrigin) {
  const std::string config = work.write("config.yaml", "version: v1\nflags:\n  migStrategy: single\n");
  PluginOptions options;
  options.config_file = config;
  options.env["MIG_STRATEGY"] = "mixed";  // what the Helm chart's env does to a ConfigMap's value
  options.extra_args = {"--device-id-strategy", "index"};
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  const std::string log = plugin->stderr_text();
  EXPECT_NE(log.find("config (start): flags.migStrategy = mixed (env MIG_STRATEGY)"), std::string::npos) << log;
  EXPECT_NE(log.find("config (start): flags.plugin.deviceIDStrategy = index (flag --device-id-strategy)"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find("config (start): configFile = \"" + config + "\" (flag --config-file)"), std::string::npos) << log;
  // Defaults are not repeated.
  EXPECT_EQ(log.find("config (start): flags.plugin.passDeviceSpecs"), std::string::npos) << log;
}

// ---- item 11: compatibility-only settings say at start that they have no effect ----

TEST_F(SwitchingE2E, CompatibilityOnlySettingsAreLoggedAsHavingNoEffect) {
  const std::string config = work.write("compat.yaml", "version: v1\nflags:\n  deviceDiscoveryStrategy: tegra\n");
  PluginOptions options;
  options.config_file = config;
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);  // accepted: NVIDIA's file loads unchanged
  const std::string log = plugin->stderr_text();
  EXPECT_NE(log.find("config (start): flags.deviceDiscoveryStrategy = tegra (file) has no effect in kgpu: kgpu "
                     "always discovers through NVML and sysfs"),
            std::string::npos)
      << log;
  EXPECT_EQ(log.find("flags.useNodeFeatureAPI"), std::string::npos) << log;  // at its default: not named
}

// ---- item 7: KGPU_GPU_TELEMETRY is a setting like the others ----

TEST_F(SwitchingE2E, GpuTelemetrySwitchIsValidatedAndShown) {
  auto bad = run_cli({"plugin", "--print-config"}, {{"KGPU_GPU_TELEMETRY", "maybe"}}, "telemetry-bad");
  EXPECT_EQ(bad.rc, 1) << bad.err;
  EXPECT_NE(bad.err.find("env KGPU_GPU_TELEMETRY: error: expected a boolean (true or false) for kgpu.gpuTelemetry, "
                         "got \"maybe\""),
            std::string::npos)
      << bad.err;
  auto off = run_cli({"plugin", "--print-config"}, {{"KGPU_GPU_TELEMETRY", "false"}}, "telemetry-off");
  ASSERT_EQ(off.rc, 0) << off.err;
  EXPECT_NE(off.out.find("= false  (env KGPU_GPU_TELEMETRY)"), std::string::npos) << off.out;
  EXPECT_NE(off.out.find("kgpu.gpuTelemetry"), std::string::npos) << off.out;
}

}  // namespace
}  // namespace kgpu::test
