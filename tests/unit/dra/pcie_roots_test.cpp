// read_pcie_roots on a small sysfs tree laid out like the kernel's: bus/pci/devices/<bdf> links
// into devices/pci<domain>:<bus>/...
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "dra/publish/pcie_roots.h"
#include "unit/dra/synthetic_node.h"

namespace kgpu::dra {
namespace {

namespace fs = std::filesystem;

class PcieRoots : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() / ("kgpu-dra-pcie-" + std::to_string(::getpid()));
    fs::remove_all(root_);
    fs::create_directories(root_ / "bus" / "pci" / "devices");
  }
  void TearDown() override { fs::remove_all(root_); }
  void add(const std::string& bdf, const std::string& under_devices) {
    fs::create_directories(root_ / "devices" / under_devices);
    fs::create_directory_symlink(fs::path("../../../devices") / under_devices, root_ / "bus" / "pci" / "devices" / bdf);
  }
  fs::path root_;
};

TEST_F(PcieRoots, RootComplexOfEachGpuBehindSwitches) {
  add("0000:01:00.0", "pci0000:00/0000:00:01.0/0000:01:00.0");
  add("0000:02:00.0", "pci0000:80/0000:80:02.0/0000:81:00.0/0000:82:00.0/0000:02:00.0");
  const auto roots = read_pcie_roots(root_.string(), testing::a100_node(3, 0));
  const std::map<std::string, std::string> expected{{"0000:01:00.0", "pci0000:00"}, {"0000:02:00.0", "pci0000:80"}};
  EXPECT_EQ(roots, expected);
}

TEST_F(PcieRoots, DeviceOutsideARootComplexIsLeftOut) {
  add("0000:01:00.0", "platform/virtual-bus/0000:01:00.0");
  fs::create_directories(root_ / "bus" / "pci" / "devices" / "0000:02:00.0");  // a plain directory
  EXPECT_TRUE(read_pcie_roots(root_.string(), testing::a100_node(2, 0)).empty());
  EXPECT_TRUE(read_pcie_roots((root_ / "missing").string(), testing::a100_node(2, 0)).empty());
}

}  // namespace
}  // namespace kgpu::dra
