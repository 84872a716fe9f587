// Config file parsing: every setting, and every error with its line and column.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "config/loader.h"
#include "core/safe_file.h"

namespace kgpu {
namespace {

const std::string kConfigs = std::string(KGPU_FIXTURES_DIR) + "/configs/";

LoadedConfig parse(const std::string& text, bool strict = false) {
  return parse_config_text(text, "config.yaml", strict);
}

// The formatted diagnostics, one string each, for whole-message comparisons.
std::vector<std::string> messages(const LoadedConfig& loaded) {
  std::vector<std::string> out;
  for (const auto& d : loaded.diagnostics) out.push_back(format_diagnostic(d));
  return out;
}

TEST(ConfigFile, EmptyDocumentIsTheDefaultConfig) {
  auto loaded = parse("");
  EXPECT_TRUE(loaded.diagnostics.empty());
  Config expected;
  expected.config_file = "config.yaml";
  EXPECT_EQ(loaded.config, expected);
}

TEST(ConfigFile, VersionMayBeEmptyOrV1) {
  EXPECT_TRUE(parse("version: v1\n").diagnostics.empty());
  EXPECT_TRUE(parse("version: \"\"\n").diagnostics.empty());
  EXPECT_EQ(messages(parse("version: v2\n")),
            std::vector<std::string>{"config.yaml:1:10: error: unknown version \"v2\" (valid: v1)"});
}

TEST(ConfigFile, NvidiaTimeSlicingFile) {
  auto loaded = validate_config_file(kConfigs + "nvidia-time-slicing.yaml", false);
  ASSERT_TRUE(loaded.diagnostics.empty()) << format_diagnostics(loaded.diagnostics);
  const Config& c = loaded.config;
  EXPECT_EQ(c.mig_strategy, MigStrategy::Single);
  EXPECT_FALSE(c.fail_on_init_error);
  EXPECT_TRUE(c.pass_device_specs);
  EXPECT_EQ(c.device_list_strategy, std::vector{DeviceListStrategy::EnvVar});
  EXPECT_EQ(c.device_id_strategy, DeviceIdStrategy::Uuid);
  EXPECT_TRUE(c.time_slicing.rename_by_default);
  EXPECT_FALSE(c.time_slicing.fail_requests_greater_than_one.has_value());
  ASSERT_EQ(c.time_slicing.resources.size(), 1u);
  EXPECT_EQ(c.time_slicing.resources[0].name, "nvidia.com/gpu");
  EXPECT_EQ(c.time_slicing.resources[0].replicas, 4);
  EXPECT_TRUE(std::holds_alternative<DeviceSelector::All>(c.time_slicing.resources[0].devices.value));
  EXPECT_FALSE(c.mps.has_value());
  EXPECT_EQ(loaded.origins.at("flags.migStrategy"), "file");
  EXPECT_EQ(loaded.origins.at("flags.mpsRoot"), "default");
}

TEST(ConfigFile, NvidiaMpsJsonFile) {
  auto loaded = validate_config_file(kConfigs + "nvidia-mps.json", false);
  ASSERT_TRUE(loaded.diagnostics.empty()) << format_diagnostics(loaded.diagnostics);
  const Config& c = loaded.config;
  EXPECT_EQ(c.mps_root, "/run/nvidia/mps");
  EXPECT_EQ(c.device_list_strategy,
            (std::vector{DeviceListStrategy::EnvVar, DeviceListStrategy::CdiAnnotations}));
  EXPECT_EQ(c.device_id_strategy, DeviceIdStrategy::Index);
  ASSERT_TRUE(c.mps.has_value());
  ASSERT_EQ(c.mps->resources.size(), 1u);
  EXPECT_EQ(c.mps->resources[0].replicas, 10);
  EXPECT_TRUE(c.time_slicing.resources.empty());
}

TEST(ConfigFile, EveryKgpuSetting) {
  auto loaded = validate_config_file(kConfigs + "kgpu-full.yaml", true);
  ASSERT_TRUE(loaded.diagnostics.empty()) << format_diagnostics(loaded.diagnostics);
  const Config& c = loaded.config;
  EXPECT_EQ(c.mig_strategy, MigStrategy::Mixed);
  EXPECT_EQ(c.nvidia_driver_root, "/run/nvidia/driver");
  EXPECT_EQ(c.nvidia_dev_root, "/");
  EXPECT_EQ(c.dev_root(), "/");
  EXPECT_EQ(c.device_list_strategy,
            (std::vector{DeviceListStrategy::CdiCri, DeviceListStrategy::CdiAnnotations}));
  EXPECT_EQ(c.cdi_annotation_prefix, "example.com/");
  EXPECT_EQ(c.nvidia_ctk_path, "/usr/local/bin/nvidia-ctk");
  EXPECT_EQ(c.shared_devices_allocation_policy, SharedAllocationPolicy::Packed);
  EXPECT_TRUE(c.gfd_oneshot);
  EXPECT_EQ(c.gfd_sleep_interval, "1m30s");
  EXPECT_EQ(c.gpu_resources, (std::vector<ResourcePattern>{{"*A100*", "nvidia.com/a100"}}));
  EXPECT_EQ(c.mig_resources, (std::vector<ResourcePattern>{{"1g.5gb", "nvidia.com/mig-small"}}));
  EXPECT_EQ(c.time_slicing.fail_requests_greater_than_one, std::optional<bool>(true));
  ASSERT_EQ(c.time_slicing.resources.size(), 2u);
  const auto& first = c.time_slicing.resources[0];
  EXPECT_EQ(first.name, "nvidia.com/gpu");
  EXPECT_EQ(first.rename, "nvidia.com/gpu.shared");
  EXPECT_EQ(first.replicas, 2);
  EXPECT_EQ(std::get<std::vector<std::string>>(first.devices.value),
            (std::vector<std::string>{"0", "1", "2:0", "GPU-8f9c2b1e-0000-0000-0000-000000000000"}));
  EXPECT_EQ(std::get<int>(c.time_slicing.resources[1].devices.value), 2);
  EXPECT_EQ(c.imex_channel_ids, std::vector<int>{0});
  EXPECT_TRUE(c.imex_required);
  EXPECT_EQ(c.sysfs_root, "/host/sys");
  EXPECT_EQ(c.proc_root, "/host/proc");
  EXPECT_EQ(c.cdi_spec_dir, "/etc/cdi");
  EXPECT_EQ(c.cdi_kind, "example.com/gpu");
  EXPECT_EQ(c.metrics_addr, ":9400");
  EXPECT_EQ(c.mig_allocation_policy, MigAllocationPolicy::Spread);
  EXPECT_EQ(c.backends, (std::vector<std::string>{"nvidia", "amd"}));
  EXPECT_TRUE(c.labels_enabled);
  EXPECT_TRUE(c.keep_labels_on_exit);
  EXPECT_TRUE(c.health.enabled);
  EXPECT_FALSE(c.health.xids_enabled);
  EXPECT_EQ(c.health.ignored_xids, (std::vector<uint64_t>{13, 31}));
  EXPECT_EQ(c.health.xid_actions,
            (std::map<uint64_t, XidAction>{{79, XidAction::MarkUnhealthyUntilReset}, {94, XidAction::Ignore}}));
  EXPECT_FALSE(c.health.recovery_enabled);
  EXPECT_EQ(c.health.recovery_probe_interval_ms, 1000u);
  EXPECT_EQ(c.health.recovery_probe_max_interval_ms, 2000u);
  EXPECT_EQ(c.health.recovery_quiet_period_ms, 3000u);
}

TEST(ConfigFile, ReportsEveryProblemWithItsPosition) {
  auto loaded = validate_config_file(kConfigs + "many-errors.yaml", false);
  const std::string f = kConfigs + "many-errors.yaml";
  EXPECT_EQ(messages(loaded),
            (std::vector<std::string>{
                f + ":3:16: error: unknown MIG strategy \"foo\" (valid: none, single, mixed)",
                f + ":4:3: warning: unknown key \"mpsroot\" in flags; did you mean \"mpsRoot\"?",
                f + ":5:20: error: expected a boolean (true or false) for flags.failOnInitError, got \"maybe\"",
                f + ":7:34: error: unknown device list strategy \"bogus\" (valid: envvar, volume-mounts, "
                    "cdi-annotations, cdi-cri)",
                f + ":8:23: error: unknown device ID strategy \"serial\" (valid: uuid, index)",
                f + ":13:17: error: replicas for sharing.timeSlicing.resources[0] must be at least 1, got 0",
                f + ":14:13: error: resource name \"nvidia.com/Bad_Name\": \"Bad_Name\" must consist of "
                    "lowercase letters, digits, '-' and '.', and start and end with a letter or digit",
            }));
}

TEST(ConfigFile, UnknownKeysAreErrorsWhenStrict) {
  const std::string text = "flags:\n  migStrategi: none\n";
  auto lax = parse(text);
  ASSERT_EQ(lax.diagnostics.size(), 1u);
  EXPECT_EQ(lax.diagnostics[0].severity, Diagnostic::Severity::Warning);
  auto strict = parse(text, true);
  ASSERT_EQ(strict.diagnostics.size(), 1u);
  EXPECT_EQ(format_diagnostic(strict.diagnostics[0]),
            "config.yaml:2:3: error: unknown key \"migStrategi\" in flags; did you mean \"migStrategy\"?");
}

TEST(ConfigFile, UnknownKeyWithoutCloseMatchListsTheValidKeys) {
  auto loaded = parse("sharing:\n  spacetime: {}\n");
  ASSERT_EQ(loaded.diagnostics.size(), 1u);
  EXPECT_EQ(loaded.diagnostics[0].message, "unknown key \"spacetime\" in sharing (valid: timeSlicing, mps)");
}

TEST(ConfigFile, UnknownTopLevelSectionSuggestsTheSection) {
  auto loaded = parse("sharin:\n  timeSlicing: {}\n");
  ASSERT_EQ(loaded.diagnostics.size(), 1u);
  EXPECT_EQ(format_diagnostic(loaded.diagnostics[0]),
            "config.yaml:1:1: warning: unknown key \"sharin\"; did you mean \"sharing\"?");
}

TEST(ConfigFile, WrongTypes) {
  auto loaded = parse("flags:\n  mpsRoot: [a, b]\n  plugin: 3\nkgpu:\n  health:\n    recovery:\n"
                      "      probeIntervalMs: soon\n");
  EXPECT_EQ(messages(loaded),
            (std::vector<std::string>{
                "config.yaml:2:12: error: expected a string for flags.mpsRoot, got a list",
                "config.yaml:3:11: error: expected a mapping for flags.plugin, got the number 3",
                "config.yaml:7:24: error: expected a non-negative integer for "
                "kgpu.health.recovery.probeIntervalMs, got \"soon\"",
            }));
}

TEST(ConfigFile, InvalidYamlIsReportedWithItsPosition) {
  auto loaded = parse("flags:\n  migStrategy: [none\n");
  ASSERT_EQ(loaded.diagnostics.size(), 1u);
  EXPECT_EQ(loaded.diagnostics[0].severity, Diagnostic::Severity::Error);
  EXPECT_GT(loaded.diagnostics[0].line, 0);
  EXPECT_TRUE(loaded.diagnostics[0].message.starts_with("invalid YAML: ")) << loaded.diagnostics[0].message;
}

TEST(ConfigFile, TopLevelMustBeAMapping) {
  EXPECT_EQ(messages(parse("- a\n- b\n")),
            std::vector<std::string>{"config.yaml:1:1: error: expected a mapping for the config file, got a list"});
}

TEST(ConfigFile, DuplicateKeysAreErrors) {
  auto loaded = parse("flags:\n  migStrategy: none\n  migStrategy: mixed\n");
  ASSERT_EQ(loaded.diagnostics.size(), 1u);
  EXPECT_EQ(format_diagnostic(loaded.diagnostics[0]),
            "config.yaml:3:3: error: duplicate key \"migStrategy\" in flags");
}

TEST(ConfigFile, DeviceListStrategyAsStringOrList) {
  EXPECT_EQ(parse("flags: {plugin: {deviceListStrategy: volume-mounts}}").config.device_list_strategy,
            std::vector{DeviceListStrategy::VolumeMounts});
  EXPECT_EQ(parse("flags: {plugin: {deviceListStrategy: [cdi-cri, envvar, cdi-cri]}}").config.device_list_strategy,
            (std::vector{DeviceListStrategy::CdiCri, DeviceListStrategy::EnvVar}));
  auto empty = parse("flags: {plugin: {deviceListStrategy: []}}");
  ASSERT_EQ(empty.diagnostics.size(), 1u);
  EXPECT_NE(empty.diagnostics[0].message.find("needs at least one value"), std::string::npos);
}

TEST(ConfigFile, BooleansAcceptYamlSpellings) {
  EXPECT_FALSE(parse("flags: {failOnInitError: no}").config.fail_on_init_error);
  EXPECT_TRUE(parse("flags: {plugin: {passDeviceSpecs: True}}").config.pass_device_specs);
}

TEST(ConfigFile, EnumsPerSetting) {
  EXPECT_EQ(parse("flags: {deviceDiscoveryStrategy: vfio}").diagnostics.at(0).message,
            "unknown device discovery strategy \"vfio\" (valid: auto, nvml, tegra)");
  EXPECT_EQ(parse("flags: {plugin: {sharedDevicesAllocationPolicy: random}}").diagnostics.at(0).message,
            "unknown shared devices allocation policy \"random\" (valid: distributed, packed)");
  EXPECT_EQ(parse("kgpu: {migAllocationPolicy: fair}").diagnostics.at(0).message,
            "unknown MIG allocation policy \"fair\" (valid: shared, same-parent, spread)");
  EXPECT_EQ(parse("kgpu: {backends: [nvidia, habana]}").diagnostics.at(0).message,
            "unknown backend \"habana\" (valid: auto, nvidia, amd, intel, generic)");
  EXPECT_EQ(parse("kgpu: {health: {xidActions: {79: explode}}}").diagnostics.at(0).message,
            "unknown XID action \"explode\" (valid: ignore, mark-unhealthy, mark-unhealthy-until-reset)");
}

TEST(ConfigFile, NullValueKeepsTheDefault) {
  auto loaded = parse("flags:\n  migStrategy:\n");
  EXPECT_TRUE(loaded.diagnostics.empty());
  EXPECT_EQ(loaded.config.mig_strategy, MigStrategy::None);
}

TEST(ConfigFile, GfdSleepIntervalMustBeADuration) {
  EXPECT_TRUE(parse("flags: {gfd: {sleepInterval: infinite}}").diagnostics.empty());
  EXPECT_TRUE(parse("flags: {gfd: {sleepInterval: 500ms}}").diagnostics.empty());
  auto bad = parse("flags:\n  gfd:\n    sleepInterval: often\n");
  ASSERT_EQ(bad.diagnostics.size(), 1u);
  EXPECT_EQ(format_diagnostic(bad.diagnostics[0]),
            "config.yaml:3:20: error: invalid duration \"often\" for gfd.sleepInterval (e.g. 60s, 1m30s, infinite)");
}

TEST(ConfigFile, ImexChannelIds) {
  EXPECT_TRUE(parse("imex: {channelIDs: []}").diagnostics.empty());
  auto bad = parse("imex:\n  channelIDs: [1, 2]\n");
  ASSERT_EQ(bad.diagnostics.size(), 1u);
  EXPECT_EQ(format_diagnostic(bad.diagnostics[0]),
            "config.yaml:2:15: error: imex.channelIDs must be [] or [0]; found [1 2]");
}

TEST(ConfigFile, ResourcePatternsNeedPatternAndName) {
  auto loaded = parse("resources:\n  gpus:\n  - pattern: \"*\"\n  - name: gpu\n");
  EXPECT_EQ(messages(loaded),
            (std::vector<std::string>{
                "config.yaml:3:5: error: resources must have a 'name' field set (resources.gpus[0])",
                "config.yaml:4:5: error: resources must have a 'pattern' field set (resources.gpus[1])",
            }));
}

TEST(ConfigFile, CdiKindMustBeVendorSlashClass) {
  auto bad = parse("kgpu:\n  cdiKind: nvidia\n");
  ASSERT_EQ(bad.diagnostics.size(), 1u);
  EXPECT_EQ(bad.diagnostics[0].line, 2);
  EXPECT_EQ(bad.diagnostics[0].column, 12);
  EXPECT_NE(bad.diagnostics[0].message.find("invalid CDI kind \"nvidia\""), std::string::npos);
}

// Issue 20 item 4: a directory (or an unreadable file) at the config path was read as an empty,
// valid config: `kgpu config validate DIR` said ok and the daemon withdrew every resource.
// Item 3: a FIFO blocked the reader forever, /dev/zero grew it without bound.
class ConfigFileHostile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (std::filesystem::temp_directory_path() / "kgpu-cfg-XXXXXX").string();
    dir = ::mkdtemp(pattern.data());
  }
  void TearDown() override {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  static std::string single_error(const LoadedConfig& loaded) {
    if (loaded.diagnostics.size() != 1 || loaded.diagnostics[0].severity != Diagnostic::Severity::Error)
      return "<not one error> " + format_diagnostics(loaded.diagnostics);
    return loaded.diagnostics[0].message;
  }
  std::string dir;
};

TEST_F(ConfigFileHostile, DirectoryIsAnErrorNotAnEmptyConfig) {
  auto loaded = validate_config_file(dir, false);
  EXPECT_NE(single_error(loaded).find("is a directory, not a regular file"), std::string::npos)
      << single_error(loaded);
  ConfigFlags flags;
  flags.set("configFile", "--config-file", dir);
  EXPECT_FALSE(load_config(flags, {}, false).ok());
}

TEST_F(ConfigFileHostile, FifoIsRefusedWithoutBlocking) {
  const std::string fifo = dir + "/config.yaml";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_NE(single_error(validate_config_file(fifo, false)).find("a FIFO"), std::string::npos);
  ConfigFlags flags;
  flags.set("configFile", "--config-file", fifo);
  auto loaded = load_config(flags, {}, false);
  ASSERT_FALSE(loaded.ok());
  EXPECT_NE(loaded.error().message.find("cannot read config file"), std::string::npos) << loaded.error().message;
}

TEST_F(ConfigFileHostile, EndlessDeviceIsRefused) {
  const std::string link = dir + "/config.yaml";
  std::filesystem::create_symlink("/dev/zero", link);  // ConfigMap-style links are followed
  EXPECT_NE(single_error(validate_config_file(link, false)).find("a character device"), std::string::npos);
}

TEST_F(ConfigFileHostile, FileOverTheLimitIsRefused) {
  const std::string big = dir + "/config.yaml";
  {
    std::ofstream out(big);
    out << "version: v1\n";
    out << std::string(kConfigFileLimit, '#');
  }
  EXPECT_NE(single_error(validate_config_file(big, false)).find("limit"), std::string::npos);
}

TEST_F(ConfigFileHostile, UnreadableFileIsAnError) {
  if (::geteuid() == 0) GTEST_SKIP() << "root reads any file";
  const std::string locked = dir + "/config.yaml";
  std::ofstream(locked) << "version: v1\n";
  ::chmod(locked.c_str(), 0);
  EXPECT_NE(single_error(validate_config_file(locked, false)).find("Permission denied"), std::string::npos);
}

TEST(ConfigFile, MissingFileIsAnError) {
  auto loaded = validate_config_file(kConfigs + "does-not-exist.yaml", false);
  ASSERT_EQ(loaded.diagnostics.size(), 1u);
  EXPECT_EQ(loaded.diagnostics[0].severity, Diagnostic::Severity::Error);
  EXPECT_NE(loaded.diagnostics[0].message.find("cannot read config file"), std::string::npos);
}

}  // namespace
}  // namespace kgpu

namespace kgpu {
namespace {

TEST(ConfigFile, DeviceGroupsAreHandedToTheSysfsParser) {
  auto ok = parse_config_text("kgpu:\n  deviceGroups:\n  - resource: example.com/rdma\n"
                              "    devices: [/dev/infiniband/uverbs*]\n",
                              "c.yaml", true);
  ASSERT_TRUE(ok.diagnostics.empty()) << format_diagnostics(ok.diagnostics);
  ASSERT_EQ(ok.config.device_groups.size(), 1u);
  EXPECT_EQ(ok.config.device_groups[0].resource, "example.com/rdma");
  auto bad = parse_config_text("kgpu:\n  deviceGroups: 3\n", "c.yaml", false);
  ASSERT_EQ(bad.diagnostics.size(), 1u);
  EXPECT_EQ(bad.diagnostics[0].line, 2);
  EXPECT_EQ(bad.diagnostics[0].severity, Diagnostic::Severity::Error);
}

}  // namespace
}  // namespace kgpu
