// kgpu.dra.*: validated with the rest of the config, so a bad value is refused at start-up and by
// `kgpu config validate`, never discovered when the first claim arrives.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "config/loader.h"

namespace kgpu {
namespace {

using ::testing::HasSubstr;

std::string errors_of(const std::string& text) {
  const auto loaded = parse_config_text(text, "c.yaml", false);
  std::vector<Diagnostic> errors;
  for (const auto& d : loaded.diagnostics)
    if (d.severity == Diagnostic::Severity::Error) errors.push_back(d);
  return format_diagnostics(errors);
}

TEST(DraSettings, ValidSettingsLoad) {
  const auto loaded = parse_config_text(
      "kgpu:\n  dra:\n    enabled: true\n    devicePlugin: false\n    gpus: [0, '12', GPU-4f5e]\n"
      "    driver: gpu.example.com\n",
      "c.yaml", false);
  EXPECT_EQ(errors_of("kgpu:\n  dra:\n    enabled: true\n    gpus: [0, GPU-4f5e]\n"), "");
  EXPECT_TRUE(loaded.config.dra.enabled);
  EXPECT_FALSE(loaded.config.dra.device_plugin);
  EXPECT_EQ(loaded.config.dra.gpus, (std::vector<std::string>{"0", "12", "GPU-4f5e"}));
  EXPECT_EQ(loaded.config.dra.driver, "gpu.example.com");
}

TEST(DraSettings, GpuEntryThatIsNeitherIndexNorUuidIsAnErrorAtItsPosition) {
  for (const char* entry : {"gpu0", "-1", "MIG-1234", "GPU-", "''", "1.5", "12345678901"}) {
    const std::string text = errors_of(std::string("kgpu:\n  dra:\n    gpus: [") + entry + "]\n");
    EXPECT_THAT(text, HasSubstr("is neither a GPU index nor a GPU UUID")) << entry;
    EXPECT_THAT(text, HasSubstr("c.yaml:3:11")) << entry;  // the list's position
  }
}

TEST(DraSettings, DriverNameMustBeADnsSubdomain) {
  // It names the folder under <kubelet root>/plugins/: "../x" must never reach a path.
  for (const char* name :
       {"../etc", "Gpu.nvidia.com", "gpu..nvidia.com", "-gpu.com", "gpu.com-", "gpu_nvidia.com", "a/b", "''"}) {
    EXPECT_THAT(errors_of(std::string("kgpu:\n  dra:\n    driver: ") + name + "\n"),
                HasSubstr("invalid DRA driver name"))
        << name;
  }
  EXPECT_THAT(errors_of("kgpu:\n  dra:\n    driver: " + std::string(64, 'a') + ".com\n"),
              HasSubstr("invalid DRA driver name"));
  for (const char* name : {"gpu.nvidia.com", "gpu-1.example.com", "x"})
    EXPECT_EQ(errors_of(std::string("kgpu:\n  dra:\n    driver: ") + name + "\n"), "") << name;
}

TEST(DraSettings, VendorsAndTheirDriverNames) {
  EXPECT_EQ(errors_of("kgpu:\n  dra:\n    vendors: [amd, intel, nvidia]\n    amdDriver: amd.example.com\n"), "");
  EXPECT_THAT(errors_of("kgpu:\n  dra:\n    vendors: [nvidia, habana]\n"),
              HasSubstr("unknown DRA vendor \"habana\" (valid: nvidia, amd, intel)"));
  EXPECT_THAT(errors_of("kgpu:\n  dra:\n    vendors: [amd, amd]\n"), HasSubstr("\"amd\" is listed twice"));
  EXPECT_THAT(errors_of("kgpu:\n  dra:\n    enabled: true\n    vendors: []\n"),
              HasSubstr("kgpu.dra.vendors needs at least one value (valid: nvidia, amd, intel)"));
  EXPECT_THAT(errors_of("kgpu:\n  dra:\n    vendors: [amd]\n    gpus: [0]\n"), HasSubstr("leaves NVIDIA out"));
  EXPECT_THAT(errors_of("kgpu:\n  dra:\n    intelDriver: gpu.amd.com\n"), HasSubstr("must differ"));
  EXPECT_THAT(errors_of("kgpu:\n  dra:\n    amdDriver: ../amd\n"), HasSubstr("invalid DRA driver name \"../amd\""));
}

TEST(DraSettings, DevicePluginOffWithoutDraServesNothingAndIsRefused) {
  EXPECT_THAT(errors_of("kgpu:\n  dra:\n    devicePlugin: false\n"), HasSubstr("nothing would be served"));
  EXPECT_EQ(errors_of("kgpu:\n  dra:\n    enabled: true\n    devicePlugin: false\n"), "");
}

// kgpu.dra.sharing.memory (issue 31): the GPUs and a request policy the API server accepts and MPS
// can enforce, refused at start-up with the key's position rather than at the first share.
TEST(DraSettings, MemorySharingLoadsAndBadPoliciesAreRefused) {
  const std::string head = "flags:\n  mpsRoot: /run/mps\nkgpu:\n  dra:\n    sharing:\n      memory:\n";
  const auto loaded = parse_config_text(head + "        gpus: [all]\n        requestPolicy: {default: 2Gi, min: 1Gi, step: "
                                               "512Mi}\n        multiprocessorsDefault: 4\n        "
                                               "activeThreadPercentage: 25\n        oneNamespacePerGpu: true\n",
                                        "c.yaml", false);
  const DraMemorySharing& m = loaded.config.dra.memory_sharing;
  EXPECT_EQ(m.gpus, std::vector<std::string>{"all"});
  EXPECT_EQ(m.default_share, "2Gi");
  EXPECT_EQ(m.min_share, "1Gi");
  EXPECT_EQ(m.share_step, "512Mi");
  EXPECT_EQ(m.multiprocessors_default, 4u);
  EXPECT_EQ(m.active_thread_percentage, 25u);
  EXPECT_TRUE(m.one_namespace_per_gpu);
  EXPECT_FALSE(DraMemorySharing{}.one_namespace_per_gpu);
  EXPECT_EQ(errors_of(head + "        gpus: [0, GPU-4f5e]\n"), "");

  EXPECT_THAT(errors_of(head + "        gpus: [all, 0]\n"), HasSubstr("is either [all] or a list"));
  EXPECT_THAT(errors_of(head + "        gpus: [gpu0]\n"), HasSubstr("entry \"gpu0\" is neither a GPU index"));
  EXPECT_THAT(errors_of("kgpu:\n  dra:\n    sharing:\n      memory:\n        gpus: [all]\n"),
              HasSubstr("needs an MPS root"));
  EXPECT_THAT(errors_of(head + "        gpus: [all]\n        requestPolicy: {default: 1536Mi}\n"),
              HasSubstr("is not a valid share: shares are the minimum 1Gi plus whole steps of 1Gi"));
  EXPECT_THAT(errors_of(head + "        gpus: [all]\n        requestPolicy: {step: 10GB}\n"),
              HasSubstr("kgpu.dra.sharing.memory.requestPolicy.step: quantity \"10GB\""));
  EXPECT_THAT(errors_of(head + "        gpus: [all]\n        requestPolicy: {min: 512Ki, default: 512Ki}\n"),
              HasSubstr("at least 1Mi"));
  EXPECT_THAT(errors_of(head + "        gpus: [all]\n        activeThreadPercentage: 101\n"),
              HasSubstr("a percentage is 0 (none) to 100"));
  // Nothing shared: the policy is not looked at.
  EXPECT_EQ(errors_of("kgpu:\n  dra:\n    sharing:\n      memory:\n        requestPolicy: {step: 10GB}\n"), "");
}

TEST(DraSettings, DynamicMigNamesGpusThatNoMemoryShareUses) {
  const auto loaded = parse_config_text("kgpu:\n  dra:\n    mig:\n      dynamic: [0, GPU-4f5e]\n", "c.yaml", false);
  EXPECT_EQ(loaded.config.dra.mig_dynamic, (std::vector<std::string>{"0", "GPU-4f5e"}));
  EXPECT_TRUE(DraConfig{}.mig_dynamic.empty());
  const std::string mig = "flags: {mpsRoot: /run/mps}\nkgpu:\n  dra:\n    mig:\n      dynamic: ";
  EXPECT_EQ(errors_of(mig + "[all]\n"), "");
  EXPECT_THAT(errors_of(mig + "[all, 1]\n"), HasSubstr("kgpu.dra.mig.dynamic is either [all] or a list"));
  EXPECT_THAT(errors_of(mig + "[mig0]\n"), HasSubstr("entry \"mig0\" is neither a GPU index"));
  const std::string shared = "    sharing:\n      memory:\n        gpus: ";
  EXPECT_EQ(errors_of(mig + "[0]\n" + shared + "[1]\n"), "");
  EXPECT_THAT(errors_of(mig + "[0, 1]\n" + shared + "[1]\n"),
              HasSubstr("kgpu.dra.mig.dynamic and kgpu.dra.sharing.memory.gpus both name GPU 1"));
  EXPECT_THAT(errors_of(mig + "[all]\n" + shared + "[1]\n"), HasSubstr("both name every GPU"));
  EXPECT_THAT(errors_of(mig + "[0]\n" + shared + "[all]\n"), HasSubstr("both name every GPU"));
}

}  // namespace
}  // namespace kgpu
