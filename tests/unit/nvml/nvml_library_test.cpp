#include "nvml/nvml_library.h"

#include <filesystem>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "unit/nvml/fake_fleet.h"

namespace kgpu {
namespace {

using ::testing::HasSubstr;

TEST(NvmlLibraryLoad, CandidatePathsOnlyUnderARealRoot) {
  EXPECT_TRUE(NvmlLibrary::candidate_paths("/").empty());
  EXPECT_TRUE(NvmlLibrary::candidate_paths("").empty());
  auto paths = NvmlLibrary::candidate_paths("/driver-root/");
  ASSERT_GE(paths.size(), 5u);
  EXPECT_EQ(paths.front(), "/driver-root/usr/lib64/libnvidia-ml.so.1");
  EXPECT_THAT(paths, ::testing::Contains("/driver-root/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1"));
  EXPECT_THAT(paths, ::testing::Contains("/driver-root/usr/lib/aarch64-linux-gnu/libnvidia-ml.so.1"));
  EXPECT_THAT(paths, ::testing::Contains("/driver-root/lib64/libnvidia-ml.so.1"));
}

TEST(NvmlLibraryLoad, MissingLibraryNamesEveryPathTried) {
  testing::TempDir root;
  // The test binary runs without the fake on LD_LIBRARY_PATH, so the bare soname fails as well.
  auto lib = NvmlLibrary::load(root.path());
  ASSERT_FALSE(lib.ok());
  EXPECT_EQ(lib.error().code, Error::Code::Unavailable);
  for (const auto& p : NvmlLibrary::candidate_paths(root.path())) EXPECT_THAT(lib.error().message, HasSubstr(p));
  EXPECT_THAT(lib.error().message, HasSubstr("libnvidia-ml.so.1 via the default loader path"));
}

TEST(NvmlLibraryLoad, FindsTheLibraryUnderTheDriverRoot) {
  testing::TempDir root;
  std::filesystem::create_directories(root.path() + "/usr/lib/x86_64-linux-gnu");
  std::filesystem::create_symlink(testing::fake_library_path(),
                                  root.path() + "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1");
  auto lib = NvmlLibrary::load(root.path());
  ASSERT_TRUE(lib.ok()) << lib.error().message;
  EXPECT_EQ((*lib)->path(), root.path() + "/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1");
}

TEST(NvmlLibraryLoad, AFileThatIsNotALibraryIsReportedWithDlerror) {
  testing::TempDir root;
  testing::write_file(root.path() + "/usr/lib64/libnvidia-ml.so.1", "not an ELF file");
  auto lib = NvmlLibrary::load(root.path());
  ASSERT_FALSE(lib.ok());
  EXPECT_THAT(lib.error().message, HasSubstr(root.path() + "/usr/lib64/libnvidia-ml.so.1 ("));
  EXPECT_THAT(lib.error().message, HasSubstr("usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1 (not present)"));
}

TEST(NvmlLibraryLoad, ALibraryWithoutNvmlIsRejectedNamingTheMissingSymbols) {
  // libm is a real shared library without a single NVML symbol.
  auto lib = NvmlLibrary::load_file("libm.so.6");
  ASSERT_FALSE(lib.ok());
  EXPECT_THAT(lib.error().message, HasSubstr("nvmlInit_v2/nvmlInit"));
  EXPECT_THAT(lib.error().message, HasSubstr("nvmlDeviceGetUUID"));
}

TEST(NvmlLibrary, ResolvesTheNewestEntryPoints) {
  testing::FakeNode node(testing::fleet_path("pcie-t4x2.yaml"));
  ASSERT_TRUE(node.ready()) << node.problem();
  const auto& s = node.nvml().symbols();
  EXPECT_EQ(s.init, "nvmlInit_v2");
  EXPECT_EQ(s.device_count, "nvmlDeviceGetCount_v2");
  EXPECT_EQ(s.handle_by_index, "nvmlDeviceGetHandleByIndex_v2");
  EXPECT_EQ(s.pci_info, "nvmlDeviceGetPciInfo_v3");
  EXPECT_EQ(s.event_set_wait, "nvmlEventSetWait_v2");
  EXPECT_EQ(s.attributes, "nvmlDeviceGetAttributes_v2");
  EXPECT_EQ(s.compute_instance_info, "nvmlComputeInstanceGetInfo_v2");
}

TEST(NvmlLibrary, InitIsReferenceCountedAndErrorsCarryNvmlText) {
  testing::FakeNode node(testing::fleet_path("pcie-t4x2.yaml"));
  ASSERT_TRUE(node.ready()) << node.problem();
  NvmlLibrary& nvml = node.nvml();
  ASSERT_TRUE(nvml.init().ok());
  ASSERT_TRUE(nvml.init().ok());
  EXPECT_EQ(nvml.init_count(), 2);
  nvml.shutdown();
  // Still initialised for the other holder: calls keep working.
  auto count = nvml.device_count();
  ASSERT_TRUE(count.ok()) << count.error().message;
  EXPECT_EQ(*count, 2u);
  auto bad = nvml.device_by_index(7);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.nvml_code(), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_THAT(bad.error().message, HasSubstr("nvmlDeviceGetHandleByIndex"));
  nvml.shutdown();
  EXPECT_EQ(nvml.init_count(), 0);
  nvml.shutdown();  // an extra shutdown is harmless
  EXPECT_EQ(nvml.init_count(), 0);
}

TEST(NvmlLibrary, InitFailureIsAClearError) {
  testing::TempDir dir;
  testing::write_file(dir.path() + "/fleet.yaml",
                      "node: {driver_version: \"550.54.15\", cuda_driver_version: 12040}\n"
                      "failures: {init: NVML_ERROR_DRIVER_NOT_LOADED}\n");
  testing::FakeNode node(dir.path() + "/fleet.yaml");
  ASSERT_TRUE(node.ready()) << node.problem();
  auto st = node.nvml().init();
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, Error::Code::Unavailable);
  EXPECT_THAT(st.error().message, HasSubstr("nvmlInit_v2"));
  EXPECT_EQ(node.nvml().init_count(), 0);
}

TEST(SysfsPciAddress, CutsTheDomainAndLowersTheCase) {
  EXPECT_EQ(sysfs_pci_address("00000000:07:00.0"), "0000:07:00.0");
  EXPECT_EQ(sysfs_pci_address("00000000:BD:00.0"), "0000:bd:00.0");
  EXPECT_EQ(sysfs_pci_address("0001:4e:00.1"), "0001:4e:00.1");
  EXPECT_EQ(sysfs_pci_address("garbage"), "");
  EXPECT_EQ(sysfs_pci_address("0000:zz:00.0"), "");
}

TEST(NvmlErrorCode, MapsLossAndAbsence) {
  EXPECT_EQ(nvml_error_code(NVML_ERROR_GPU_IS_LOST), Error::Code::Unavailable);
  EXPECT_EQ(nvml_error_code(NVML_ERROR_NOT_SUPPORTED), Error::Code::NotFound);
  EXPECT_EQ(nvml_error_code(NVML_ERROR_INVALID_ARGUMENT), Error::Code::InvalidArgument);
  EXPECT_EQ(nvml_error_code(NVML_ERROR_UNKNOWN), Error::Code::Internal);
}

}  // namespace
}  // namespace kgpu
