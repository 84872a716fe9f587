// Issue 30, item 11: `kgpu config validate` says what `kgpu plugin` will do with a file. A file the
// daemon refuses (sharing.mps without an MPS root) is an error for both, with the same words; the
// root the deployment gives is passed to validate as --mps-root, and then both accept it.
#include <gtest/gtest.h>

#include <string>

#include "e2e/harness.h"

namespace kgpu::test {
namespace {

using namespace std::chrono_literals;

const std::string kMissingRoot = "sharing.mps requires an MPS root: set flags.mpsRoot, MPS_ROOT or --mps-root";
const std::string kMpsFile = "version: v1\nsharing:\n  mps:\n    resources:\n    - {name: nvidia.com/gpu, replicas: 4}\n";

struct Outcome {
  int rc = -1;
  std::string output;  // stdout and stderr
};

Outcome run(const TempDir& work, std::vector<std::string> argv, const std::string& name,
            std::map<std::string, std::string> env = {}) {
  ProcessOptions p;
  p.argv = std::move(argv);
  p.env = std::move(env);
  ChildProcess child(p, work.path(), name);
  const auto rc = child.wait_exit(30s);
  return {rc.value_or(-1), child.stdout_text() + child.stderr_text()};
}

TEST(ConfigAgreementE2E, MpsWithoutARootIsRefusedByValidateAndByThePlugin) {
  TempDir work("kgpu-agree");
  const std::string file = work.write("mps.yaml", kMpsFile);
  const Outcome validate = run(work, {kgpu_binary(), "config", "validate", file}, "validate");
  EXPECT_EQ(validate.rc, 1) << validate.output;
  EXPECT_NE(validate.output.find(file + ":3:3: error: " + kMissingRoot), std::string::npos) << validate.output;

  const Outcome plugin = run(work,
                             {kgpu_binary(), "plugin", "--config-file", file, "--kubelet-socket",
                              work.path() + "/kubelet.sock"},
                             "plugin", {{"LD_LIBRARY_PATH", fake_nvml_dir()}, {"KGPU_FAKE_NVML_FLEET", fleet_path("pcie-t4x2.yaml")}});
  EXPECT_EQ(plugin.rc, 1) << plugin.output;
  EXPECT_NE(plugin.output.find(file + ":3:3: error: " + kMissingRoot), std::string::npos) << plugin.output;
}

TEST(ConfigAgreementE2E, TheRootTheDeploymentGivesMakesTheFileValid) {
  TempDir work("kgpu-agree");
  const std::string file = work.write("mps.yaml", kMpsFile);
  const Outcome validate =
      run(work, {kgpu_binary(), "config", "validate", "--mps-root", "/run/nvidia/mps", file}, "validate");
  EXPECT_EQ(validate.rc, 0) << validate.output;
  EXPECT_NE(validate.output.find(file + ": ok"), std::string::npos) << validate.output;
  EXPECT_EQ(validate.output.find(kMissingRoot), std::string::npos) << validate.output;
}

}  // namespace
}  // namespace kgpu::test
