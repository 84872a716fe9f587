// sharing.timeSlicing / sharing.mps and resource names.
#include <gtest/gtest.h>

#include "config/loader.h"
#include "config/resource_names.h"

namespace kgpu {
namespace {

LoadedConfig parse(const std::string& text) { return parse_config_text(text, "c.yaml", false); }

std::string only_message(const LoadedConfig& loaded) {
  EXPECT_EQ(loaded.diagnostics.size(), 1u) << format_diagnostics(loaded.diagnostics);
  return loaded.diagnostics.empty() ? "" : format_diagnostic(loaded.diagnostics[0]);
}

TEST(ResourceNames, BareNamesGetTheNvidiaPrefix) {
  EXPECT_EQ(normalise_resource_name("gpu").value(), "nvidia.com/gpu");
  EXPECT_EQ(normalise_resource_name("nvidia.com/mig-1g.5gb").value(), "nvidia.com/mig-1g.5gb");
  EXPECT_EQ(normalise_resource_name("example.com/tpu").value(), "example.com/tpu");
}

TEST(ResourceNames, InvalidNamesAreRejectedWithTheReason) {
  EXPECT_FALSE(normalise_resource_name("").ok());
  EXPECT_FALSE(normalise_resource_name("gpu_shared").ok());
  EXPECT_FALSE(normalise_resource_name("-gpu").ok());
  EXPECT_FALSE(normalise_resource_name("gpu.").ok());
  EXPECT_FALSE(normalise_resource_name("Example.com/gpu").ok());
  EXPECT_FALSE(normalise_resource_name("kubernetes.io/gpu").ok());
  // 63 characters in all is the limit (NVIDIA's rule for the whole name).
  std::string longest(63 - 11, 'a');
  EXPECT_TRUE(normalise_resource_name(longest).ok());
  auto too_long = normalise_resource_name(longest + "a");
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.error().message.find("is 64 characters long; at most 63"), std::string::npos);
}

TEST(Sharing, ReplicasMustBePresentAndAtLeastOne) {
  EXPECT_EQ(only_message(parse("sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n")),
            "c.yaml:4:7: error: no replicas specified for sharing.timeSlicing.resources[0]");
  EXPECT_EQ(only_message(parse("sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: -2\n")),
            "c.yaml:5:17: error: replicas for sharing.timeSlicing.resources[0] must be at least 1, got -2");
  EXPECT_EQ(only_message(parse("sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: many\n")),
            "c.yaml:5:17: error: expected a positive integer for sharing.timeSlicing.resources[0].replicas, "
            "got the string \"many\"");
  // One replica is accepted (NVIDIA demands two): the resource is advertised unshared.
  auto one = parse("sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 1\n");
  EXPECT_TRUE(one.diagnostics.empty());
  EXPECT_EQ(one.config.time_slicing.resources.at(0).replicas, 1);
}

TEST(Sharing, NameIsRequiredAndResourcesNonEmpty) {
  EXPECT_EQ(only_message(parse("sharing:\n  timeSlicing:\n    resources:\n    - replicas: 2\n")),
            "c.yaml:4:7: error: no resource name specified in sharing.timeSlicing.resources[0]");
  EXPECT_EQ(only_message(parse("sharing:\n  timeSlicing:\n    renameByDefault: true\n")),
            "c.yaml:3:5: error: no resources specified in sharing.timeSlicing");
  EXPECT_EQ(only_message(parse("sharing:\n  timeSlicing:\n    resources: []\n")),
            "c.yaml:3:16: error: no resources specified in sharing.timeSlicing");
}

TEST(Sharing, DuplicateResourceIsAnError) {
  auto loaded = parse("sharing:\n  timeSlicing:\n    resources:\n    - {name: gpu, replicas: 2}\n"
                      "    - {name: nvidia.com/gpu, replicas: 3}\n");
  EXPECT_EQ(only_message(loaded),
            "c.yaml:5:7: error: resource \"nvidia.com/gpu\" is listed more than once in sharing.timeSlicing");
}

TEST(Sharing, DevicesSelectors) {
  auto all = parse("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2, devices: all}]}}");
  EXPECT_TRUE(std::holds_alternative<DeviceSelector::All>(all.config.time_slicing.resources.at(0).devices.value));
  auto count = parse("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2, devices: 3}]}}");
  EXPECT_EQ(std::get<int>(count.config.time_slicing.resources.at(0).devices.value), 3);
  auto list = parse("sharing: {timeSlicing: {resources: [{name: gpu, replicas: 2, devices: "
                    "[0, '1:2', MIG-abc, MIG-GPU-abc/1/0, 0]}]}}");
  EXPECT_EQ(std::get<std::vector<std::string>>(list.config.time_slicing.resources.at(0).devices.value),
            (std::vector<std::string>{"0", "1:2", "MIG-abc", "MIG-GPU-abc/1/0"}));
}

TEST(Sharing, BadDevicesAreReportedPerEntry) {
  auto loaded = parse("sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 2\n"
                      "      devices: [0, first, 'x:1']\n");
  ASSERT_EQ(loaded.diagnostics.size(), 2u);
  EXPECT_EQ(format_diagnostic(loaded.diagnostics[0]),
            "c.yaml:6:20: error: unsupported device \"first\" in devices of sharing.timeSlicing.resources[0] "
            "(valid: GPU index, \"i:j\" MIG index, GPU-<uuid>, MIG-<uuid>)");
  EXPECT_EQ(loaded.diagnostics[1].column, 27);
  EXPECT_EQ(only_message(parse("sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 2\n"
                               "      devices: some\n")),
            "c.yaml:6:16: error: invalid devices value \"some\" for sharing.timeSlicing.resources[0] "
            "(valid: \"all\", a positive count, or a list of devices)");
  EXPECT_EQ(only_message(parse("sharing:\n  timeSlicing:\n    resources:\n    - name: gpu\n      replicas: 2\n"
                               "      devices: 0\n")),
            "c.yaml:6:16: error: devices count for sharing.timeSlicing.resources[0] must be at least 1, got 0");
}

TEST(Sharing, RenameByDefaultNameMustStayValid) {
  std::string name(50, 'g');  // nvidia.com/ + 50 = 61; + ".shared" = 68 > 63
  auto loaded = parse("sharing:\n  timeSlicing:\n    renameByDefault: true\n    resources:\n    - name: " + name +
                      "\n      replicas: 2\n");
  ASSERT_EQ(loaded.diagnostics.size(), 1u);
  EXPECT_EQ(loaded.diagnostics[0].line, 5);
  EXPECT_NE(loaded.diagnostics[0].message.find("renameByDefault adds \".shared\""), std::string::npos);
}

// Issue 30, item 11: `kgpu config validate` and `kgpu plugin` agree. The daemon refuses to start
// with sharing.mps and no MPS root, so validating the file alone is an error too; the root the
// deployment will give (the chart's MPS_ROOT) is passed as validate's --mps-root.
TEST(Sharing, MpsWithoutRootIsAnErrorAsForTheDaemon) {
  const std::string text = "sharing:\n  mps:\n    resources:\n    - {name: gpu, replicas: 4}\n";
  auto loaded = parse(text);
  EXPECT_EQ(only_message(loaded),
            "c.yaml:2:3: error: sharing.mps requires an MPS root: set flags.mpsRoot, MPS_ROOT or --mps-root");
  ASSERT_TRUE(loaded.config.mps.has_value());
  EXPECT_FALSE(loaded.config.mps->fail_requests_greater_than_one.has_value());

  auto with_root = parse_config_text(text, "c.yaml", false, "/run/nvidia/mps");
  EXPECT_TRUE(with_root.diagnostics.empty()) << format_diagnostics(with_root.diagnostics);
  EXPECT_EQ(with_root.config.mps_root, "/run/nvidia/mps");
  EXPECT_EQ(with_root.origins.at("flags.mpsRoot"), "flag --mps-root");
}

TEST(Sharing, MpsOnMigResourceUnderMixedIsAnErrorForThatResourceOnly) {
  auto loaded = parse("flags: {migStrategy: mixed, mpsRoot: /run/nvidia/mps}\n"
                      "sharing:\n  mps:\n    resources:\n    - {name: gpu, replicas: 4}\n"
                      "    - {name: mig-1g.5gb, replicas: 2}\n");
  EXPECT_EQ(only_message(loaded),
            "c.yaml:6:7: error: MPS cannot share MIG devices: \"nvidia.com/mig-1g.5gb\" is a MIG resource "
            "under migStrategy mixed (use sharing.timeSlicing)");
}

TEST(Sharing, ExplicitFailRequestsGreaterThanOne) {
  auto loaded = parse("sharing: {mps: {failRequestsGreaterThanOne: false, resources: [{name: gpu, replicas: 2}]}}\n"
                      "flags: {mpsRoot: /m}");
  EXPECT_TRUE(loaded.diagnostics.empty()) << format_diagnostics(loaded.diagnostics);
  EXPECT_EQ(loaded.config.mps->fail_requests_greater_than_one, std::optional<bool>(false));
}

}  // namespace
}  // namespace kgpu
