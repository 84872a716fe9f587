// kgpu-fake-nvml-fixture: the sysfs / proc / dev tree written for a fleet.
#include <gmock/gmock.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "nvml_under_test.h"

namespace kgpu::fake_nvml::testing {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

std::string read(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

int run_tool(const std::string& fleet, const std::string& out, const std::string& err_file) {
  const std::string cmd = std::string(KGPU_FAKE_NVML_DIR) + "/kgpu-fake-nvml-fixture '" + fleet + "' '" + out + "' 2>'" +
                          err_file + "'";
  return std::system(cmd.c_str());
}

TEST(FakeNvmlFixture, WritesSysfsProcAndDevForAMigFleet) {
  TempDir dir;
  ASSERT_EQ(run_tool(fleet_path("a100-mig-mixed"), dir.path() + "/root", dir.path() + "/err"), 0) << read(dir.path() + "/err");
  const fs::path root = dir.path() + "/root";
  // GPU 2 of the fleet: bus 0000:81:00.0, NUMA node 1, A100 device id 0x20b0.
  const fs::path pci = root / "sys/bus/pci/devices/0000:81:00.0";
  EXPECT_EQ(read(pci / "numa_node"), "1\n");
  EXPECT_EQ(read(pci / "vendor"), "0x10de\n");
  EXPECT_EQ(read(pci / "device"), "0x20b0\n");
  EXPECT_EQ(read(pci / "class"), "0x030200\n");

  // The driver's numbering: gpu<m>/gi<g> = 3 + 135 m + 9 g, its CIs follow.
  const std::string minors = read(root / "proc/driver/nvidia-caps/mig-minors");
  EXPECT_THAT(minors, HasSubstr("config 1\nmonitor 2\n"));
  EXPECT_THAT(minors, HasSubstr("gpu0/gi0/access 3\n"));
  EXPECT_THAT(minors, HasSubstr("gpu0/gi1/access 12\n"));
  EXPECT_THAT(minors, HasSubstr("gpu0/gi1/ci0/access 13\n"));
  EXPECT_THAT(minors, HasSubstr("gpu1/gi0/access 138\n"));

  for (const char* node : {"nvidia0", "nvidia3", "nvidiactl", "nvidia-uvm", "nvidia-uvm-tools", "nvidia-modeset",
                           "nvidia-caps/nvidia-cap1", "nvidia-caps/nvidia-cap2"})
    EXPECT_TRUE(fs::is_regular_file(root / "dev" / node)) << node;
  // Every existing instance has its capability file and /dev node, with matching minors.
  size_t instances = 0;
  for (const auto& entry : fs::recursive_directory_iterator(root / "proc/driver/nvidia/capabilities")) {
    if (entry.path().filename() != "access" || entry.path().parent_path().filename() == "mig") continue;
    const std::string content = read(entry.path());
    ASSERT_THAT(content, HasSubstr("DeviceFileMinor: "));
    const std::string minor = content.substr(content.find(": ") + 2, content.find('\n') - content.find(": ") - 2);
    EXPECT_TRUE(fs::is_regular_file(root / "dev/nvidia-caps" / ("nvidia-cap" + minor))) << entry.path();
    ++instances;
  }
  EXPECT_EQ(instances, 2u * (3 + 7 + 4));  // a GI and a CI file per MIG device
}

TEST(FakeNvmlFixture, ReportsBadFleetsAndUsage) {
  TempDir dir;
  const std::string bad = dir.file("bad.yaml", "node: {driver_version: \"1\", cuda_driver_version: 1}\ngpus: 3\n");
  EXPECT_NE(run_tool(bad, dir.path() + "/out", dir.path() + "/err"), 0);
  EXPECT_THAT(read(dir.path() + "/err"), HasSubstr(bad + ":2:"));
  EXPECT_THAT(read(dir.path() + "/err"), HasSubstr("gpus"));
  const std::string usage = std::string(KGPU_FAKE_NVML_DIR) + "/kgpu-fake-nvml-fixture >/dev/null 2>&1";
  EXPECT_NE(std::system(usage.c_str()), 0);
}

}  // namespace
}  // namespace kgpu::fake_nvml::testing
