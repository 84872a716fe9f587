// Layering: flag > env > file > default, origins, env/flag errors, flags registration.
#include <algorithm>

#include <gtest/gtest.h>

#include "config/loader.h"

namespace kgpu {
namespace {

const std::string kConfigs = std::string(KGPU_FIXTURES_DIR) + "/configs/";
using Env = std::map<std::string, std::string>;

ConfigFlags with_file(const std::string& name) {
  ConfigFlags flags;
  flags.set("configFile", "--config-file", kConfigs + name);
  return flags;
}

TEST(Precedence, DefaultsWhenNothingIsGiven) {
  auto loaded = load_config({}, {}, false);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  // Compared with a named object: GCC 12 -O2 reports a false maybe-uninitialized on a temporary.
  static const Config defaults;
  EXPECT_TRUE(loaded->config == defaults);
  EXPECT_EQ(loaded->origins.at("flags.migStrategy"), "default");
  EXPECT_EQ(loaded->origins.at("configFile"), "default");
}

TEST(Precedence, FileBeatsDefault) {
  auto loaded = load_config(with_file("nvidia-time-slicing.yaml"), {}, false);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->config.mig_strategy, MigStrategy::Single);
  EXPECT_EQ(loaded->origins.at("flags.migStrategy"), "file");
  EXPECT_EQ(loaded->origins.at("configFile"), "flag --config-file");
  EXPECT_EQ(loaded->config.config_file, kConfigs + "nvidia-time-slicing.yaml");
}

TEST(Precedence, EnvBeatsFile) {
  // NVIDIA's verified behaviour: a config with migStrategy single, run with MIG_STRATEGY=mixed, is mixed.
  auto loaded = load_config(with_file("nvidia-time-slicing.yaml"), Env{{"MIG_STRATEGY", "mixed"}}, false);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->config.mig_strategy, MigStrategy::Mixed);
  EXPECT_EQ(loaded->origins.at("flags.migStrategy"), "env MIG_STRATEGY");
}

TEST(Precedence, FlagBeatsEnv) {
  ConfigFlags flags = with_file("nvidia-time-slicing.yaml");
  flags.set("flags.migStrategy", "--mig-strategy", "none");
  auto loaded = load_config(flags, Env{{"MIG_STRATEGY", "mixed"}}, false);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->config.mig_strategy, MigStrategy::None);
  EXPECT_EQ(loaded->origins.at("flags.migStrategy"), "flag --mig-strategy");
}

TEST(Precedence, ConfigFileFromEnv) {
  auto loaded = load_config({}, Env{{"CONFIG_FILE", kConfigs + "nvidia-mps.json"}}, false);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->config.device_id_strategy, DeviceIdStrategy::Index);
  EXPECT_EQ(loaded->origins.at("configFile"), "env CONFIG_FILE");
}

TEST(Precedence, EveryNvidiaEnvName) {
  Env env = {{"MIG_STRATEGY", "single"},
             {"FAIL_ON_INIT_ERROR", "false"},
             {"MPS_ROOT", "/run/nvidia/mps"},
             {"NVIDIA_DRIVER_ROOT", "/run/nvidia/driver"},
             {"NVIDIA_DEV_ROOT", "/dev-root"},
             {"DEVICE_DISCOVERY_STRATEGY", "nvml"},
             {"PASS_DEVICE_SPECS", "true"},
             {"DEVICE_LIST_STRATEGY", "volume-mounts,cdi-cri"},
             {"DEVICE_ID_STRATEGY", "index"},
             {"CDI_ANNOTATION_PREFIX", "x.io/"},
             {"NVIDIA_CDI_HOOK_PATH", "/hook"},
             {"DRIVER_ROOT_CTR_PATH", "/host-driver"},
             {"SHARED_DEVICES_ALLOCATION_POLICY", "packed"},
             {"KUBELET_SOCKET", "/tmp/k.sock"},
             {"GDS_ENABLED", "1"},
             {"MOFED_ENABLED", "t"},
             {"GFD_ONESHOT", "true"},
             {"GFD_NO_TIMESTAMP", "true"},
             {"GFD_SLEEP_INTERVAL", "10s"},
             {"GFD_OUTPUT_FILE", "/tmp/labels"},
             {"GFD_MACHINE_TYPE_FILE", "/tmp/product"},
             {"KGPU_SYSFS_ROOT", "/host/sys"},
             {"KGPU_CDI_SPEC_DIR", "/tmp/cdi"}};
  auto loaded = load_config({}, env, false);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const Config& c = loaded->config;
  EXPECT_EQ(c.mig_strategy, MigStrategy::Single);
  EXPECT_FALSE(c.fail_on_init_error);
  EXPECT_EQ(c.mps_root, "/run/nvidia/mps");
  EXPECT_EQ(c.nvidia_driver_root, "/run/nvidia/driver");
  EXPECT_EQ(c.dev_root(), "/dev-root");
  EXPECT_EQ(c.device_discovery_strategy, "nvml");
  EXPECT_TRUE(c.pass_device_specs);
  EXPECT_EQ(c.device_list_strategy, (std::vector{DeviceListStrategy::VolumeMounts, DeviceListStrategy::CdiCri}));
  EXPECT_EQ(c.device_id_strategy, DeviceIdStrategy::Index);
  EXPECT_EQ(c.cdi_annotation_prefix, "x.io/");
  EXPECT_EQ(c.nvidia_ctk_path, "/hook");
  EXPECT_EQ(loaded->origins.at("flags.plugin.nvidiaCTKPath"), "env NVIDIA_CDI_HOOK_PATH");
  EXPECT_EQ(c.container_driver_root, "/host-driver");
  EXPECT_EQ(c.shared_devices_allocation_policy, SharedAllocationPolicy::Packed);
  EXPECT_EQ(c.kubelet_socket, "/tmp/k.sock");
  EXPECT_TRUE(c.gds_enabled);
  EXPECT_TRUE(c.mofed_enabled);
  EXPECT_TRUE(c.gfd_oneshot);
  EXPECT_TRUE(c.gfd_no_timestamp);
  EXPECT_EQ(c.gfd_sleep_interval, "10s");
  EXPECT_EQ(c.gfd_output_file, "/tmp/labels");
  EXPECT_EQ(c.gfd_machine_type_file, "/tmp/product");
  EXPECT_EQ(c.sysfs_root, "/host/sys");
  EXPECT_EQ(c.cdi_spec_dir, "/tmp/cdi");
}

TEST(Precedence, FirstListedEnvNameWins) {
  auto loaded = load_config({}, Env{{"NVIDIA_CTK_PATH", "/a"}, {"NVIDIA_CDI_HOOK_PATH", "/b"}}, false);
  ASSERT_TRUE(loaded.ok());
  EXPECT_EQ(loaded->config.nvidia_ctk_path, "/a");
}

TEST(Precedence, EmptyEnumEnvIsUnset) {
  // Helm renders unset values as empty strings; they must not be errors.
  auto loaded = load_config({}, Env{{"MIG_STRATEGY", ""}, {"MPS_ROOT", ""}}, false);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_EQ(loaded->origins.at("flags.migStrategy"), "default");
  EXPECT_EQ(loaded->origins.at("flags.mpsRoot"), "env MPS_ROOT");
}

TEST(Precedence, BadEnvAndFlagValuesNameTheirSource) {
  ConfigFlags flags;
  flags.set("flags.plugin.deviceIDStrategy", "--device-id-strategy", "serial");
  auto loaded = load_config(flags, Env{{"MIG_STRATEGY", "foo"}, {"PASS_DEVICE_SPECS", "perhaps"}}, false);
  ASSERT_FALSE(loaded.ok());
  EXPECT_EQ(loaded.error().message,
            "env MIG_STRATEGY: error: unknown MIG strategy \"foo\" (valid: none, single, mixed)\n"
            "env PASS_DEVICE_SPECS: error: expected a boolean (true or false) for flags.plugin.passDeviceSpecs, "
            "got \"perhaps\"\n"
            "flag --device-id-strategy: error: unknown device ID strategy \"serial\" (valid: uuid, index)");
}

TEST(Precedence, FileErrorsFailTheLoadAndWarningsSurvive) {
  auto bad = load_config(with_file("many-errors.yaml"), {}, false);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.error().code, Error::Code::InvalidArgument);
  // One per line, as `config validate` prints them: the warnings' did-you-mean hints too (issue
  // 30, item 7: a failed reload or start must not hide them).
  EXPECT_EQ(std::count(bad.error().message.begin(), bad.error().message.end(), '\n'), 6);
  EXPECT_NE(bad.error().message.find(":4:3: warning: unknown key \"mpsroot\" in flags; did you mean \"mpsRoot\"?"),
            std::string::npos)
      << bad.error().message;

  auto warned = load_config({}, Env{{"CONFIG_FILE", kConfigs + "nvidia-time-slicing.yaml"}}, false);
  ASSERT_TRUE(warned.ok());
  EXPECT_TRUE(warned->diagnostics.empty());
}

TEST(Precedence, MpsRootFromEnvSatisfiesFileMps) {
  const std::string mps = kConfigs + "nvidia-mps.json";
  ConfigFlags flags;
  flags.set("configFile", "--config-file", mps);
  flags.set("flags.mpsRoot", "--mps-root", "");
  auto missing = load_config(flags, {}, false);
  ASSERT_FALSE(missing.ok());
  // Reported where MPS was asked for: the file's sharing.mps key.
  EXPECT_EQ(missing.error().message, mps + ":9:5: error: sharing.mps requires an MPS root: set flags.mpsRoot, "
                                           "MPS_ROOT or --mps-root");
  flags.set("flags.mpsRoot", "--mps-root", "/mps");
  EXPECT_TRUE(load_config(flags, {}, false).ok());
}

TEST(Precedence, MissingConfigFileIsAnError) {
  auto loaded = load_config(with_file("nope.yaml"), {}, false);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message.find("nope.yaml: error: cannot read config file"), std::string::npos);
}

TEST(Precedence, HealthEnvVariables) {
  auto off = load_config({}, Env{{"DP_DISABLE_HEALTHCHECKS", "all"}}, false);
  ASSERT_TRUE(off.ok());
  EXPECT_FALSE(off->config.health.enabled);
  EXPECT_EQ(off->origins.at("kgpu.health.enabled"), "env DP_DISABLE_HEALTHCHECKS");
  auto extra = load_config({}, Env{{"DP_DISABLE_HEALTHCHECKS", "xids,48"}, {"DP_ENABLE_HEALTHCHECKS", "13"}}, false);
  ASSERT_TRUE(extra.ok());
  EXPECT_FALSE(extra->config.health.xids_enabled);
  EXPECT_EQ(extra->config.health.ignored_xids, (std::vector<uint64_t>{31, 43, 45, 68, 109, 48}));
}

// NVIDIA's plugin logs a bad entry and keeps running: the entry is skipped with a warning naming
// it, the rest of the list applies (issue 30, item 3).
TEST(Precedence, BadHealthEnvEntryIsSkippedWithAWarning) {
  auto loaded = load_config({}, Env{{"DP_DISABLE_HEALTHCHECKS", "79,gpu"}}, false);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_TRUE(loaded->config.health.enabled);
  EXPECT_NE(std::find(loaded->config.health.ignored_xids.begin(), loaded->config.health.ignored_xids.end(), 79u),
            loaded->config.health.ignored_xids.end());
  ASSERT_EQ(loaded->diagnostics.size(), 1u);
  EXPECT_EQ(loaded->diagnostics[0].severity, Diagnostic::Severity::Warning);
  EXPECT_EQ(loaded->diagnostics[0].file, "env DP_DISABLE_HEALTHCHECKS");
  EXPECT_NE(loaded->diagnostics[0].message.find("'gpu' is neither"), std::string::npos);
  auto enable = load_config({}, Env{{"DP_ENABLE_HEALTHCHECKS", "nope,13"}}, false);
  ASSERT_TRUE(enable.ok());
  EXPECT_EQ(std::count(enable->config.health.ignored_xids.begin(), enable->config.health.ignored_xids.end(), 13u), 0);
  ASSERT_EQ(enable->diagnostics.size(), 1u);
  EXPECT_EQ(enable->diagnostics[0].file, "env DP_ENABLE_HEALTHCHECKS");
}

TEST(Precedence, DraSettingsFromEnvAndFlags) {
  // The Helm chart sets the environment; a flag still wins, as for every setting.
  ConfigFlags flags;
  flags.set("kgpu.dra.driver", "--dra-driver", "gpu.example.com");
  auto loaded = load_config(flags,
                            Env{{"KGPU_DRA", "true"}, {"KGPU_DRA_GPUS", "2,GPU-3"}, {"KGPU_DEVICE_PLUGIN", "false"},
                                {"KGPU_DRA_DRIVER", "gpu.nvidia.com"}},
                            false);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_TRUE(loaded->config.dra.enabled);
  EXPECT_FALSE(loaded->config.dra.device_plugin);
  EXPECT_EQ(loaded->config.dra.gpus, (std::vector<std::string>{"2", "GPU-3"}));
  EXPECT_EQ(loaded->config.dra.driver, "gpu.example.com");
  EXPECT_EQ(loaded->origins.at("kgpu.dra.gpus"), "env KGPU_DRA_GPUS");
  EXPECT_EQ(loaded->origins.at("kgpu.dra.driver"), "flag --dra-driver");
  EXPECT_FALSE(load_config({}, Env{{"KGPU_DRA", "maybe"}}, false).ok());
}

TEST(Flags, CommandLineParsingFillsConfigFlags) {
  CLI::App app;
  ConfigFlags flags;
  add_config_flags(app, flags, FlagScope::Plugin);
  std::vector<std::string> args = {"--mig-strategy=mixed",        "--pass-device-specs",
                                   "--fail-on-init-error=false",  "--device-list-strategy", "envvar",
                                   "--device-list-strategy=cdi-cri", "--driver-root", "/drv",
                                   "--sysfs-root", "/s"};
  std::reverse(args.begin(), args.end());  // CLI11 parses a reversed vector
  app.parse(args);
  auto loaded = load_config(flags, {}, false);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  const Config& c = loaded->config;
  EXPECT_EQ(c.mig_strategy, MigStrategy::Mixed);
  EXPECT_TRUE(c.pass_device_specs);
  EXPECT_FALSE(c.fail_on_init_error);
  EXPECT_EQ(c.device_list_strategy, (std::vector{DeviceListStrategy::EnvVar, DeviceListStrategy::CdiCri}));
  EXPECT_EQ(c.nvidia_driver_root, "/drv");
  EXPECT_EQ(loaded->origins.at("flags.nvidiaDriverRoot"), "flag --nvidia-driver-root");
  EXPECT_EQ(c.sysfs_root, "/s");
  EXPECT_EQ(loaded->origins.at("flags.plugin.passDeviceSpecs"), "flag --pass-device-specs");
}

TEST(Describe, PrintsEveryValueWithItsOrigin) {
  ConfigFlags flags = with_file("nvidia-time-slicing.yaml");
  flags.set("flags.plugin.deviceIDStrategy", "--device-id-strategy", "index");
  auto loaded = load_config(flags, Env{{"MIG_STRATEGY", "mixed"}}, false);
  ASSERT_TRUE(loaded.ok());
  std::string text = describe_effective_config(*loaded);
  auto line_of = [&](const std::string& key) {
    auto start = text.find(key + " ");
    EXPECT_NE(start, std::string::npos) << key;
    return text.substr(start, text.find('\n', start) - start);
  };
  EXPECT_TRUE(line_of("flags.migStrategy").ends_with("= mixed  (env MIG_STRATEGY)")) << text;
  EXPECT_TRUE(line_of("flags.failOnInitError").ends_with("= false  (file)"));
  EXPECT_TRUE(line_of("flags.plugin.deviceIDStrategy").ends_with("= index  (flag --device-id-strategy)"));
  EXPECT_TRUE(line_of("flags.mpsRoot").ends_with("= \"\"  (default)"));
  EXPECT_TRUE(line_of("sharing.timeSlicing")
                  .ends_with("= {renameByDefault: true, failRequestsGreaterThanOne: unset, resources: "
                             "[{name: nvidia.com/gpu, replicas: 4, devices: all}]}  (file)"));
}

// Issue 30, item 11: compatibility-only settings given something other than their default are
// named at start with their origin and that they have no effect; defaults and other keys are not.
TEST(Describe, CompatibilityOnlySettingsSayTheyHaveNoEffect) {
  auto quiet = load_config(with_file("nvidia-time-slicing.yaml"), {}, false);
  ASSERT_TRUE(quiet.ok()) << quiet.error().message;
  EXPECT_TRUE(describe_compatibility_only(*quiet).empty());

  ConfigFlags flags = with_file("nvidia-time-slicing.yaml");
  flags.set("flags.deviceDiscoveryStrategy", "--device-discovery-strategy", "tegra");
  // flags.useNodeFeatureAPI has an effect since issue 41 (the NodeFeature output): not named.
  auto loaded = load_config(flags, Env{{"GFD_USE_NODE_FEATURE_API", "true"}}, false);
  ASSERT_TRUE(loaded.ok()) << loaded.error().message;
  EXPECT_TRUE(loaded->config.use_node_feature_api);
  auto notes = describe_compatibility_only(*loaded);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_TRUE(notes[0].starts_with("flags.deviceDiscoveryStrategy = tegra (flag --device-discovery-strategy) has no "
                                   "effect in kgpu: kgpu always discovers through NVML and sysfs"))
      << notes[0];

  // The same value as the default (an NVIDIA file spelling out "auto") is not worth a warning.
  ConfigFlags same = with_file("nvidia-time-slicing.yaml");
  same.set("flags.deviceDiscoveryStrategy", "--device-discovery-strategy", "auto");
  auto unchanged = load_config(same, {}, false);
  ASSERT_TRUE(unchanged.ok()) << unchanged.error().message;
  EXPECT_EQ(unchanged->origins.at("flags.deviceDiscoveryStrategy"), "flag --device-discovery-strategy");
  EXPECT_TRUE(describe_compatibility_only(*unchanged).empty());
}

}  // namespace
}  // namespace kgpu
