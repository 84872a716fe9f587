#include "nvml/device_checks.h"

#include <gtest/gtest.h>

namespace kgpu {
namespace {

// Regression (issue 13 "Also"): an absurd count from NVML was walked (and allocated) blindly.
TEST(CheckDeviceCount, CapsAnAbsurdCountWithAProblem) {
  EXPECT_EQ(check_device_count(8).usable, 8u);
  EXPECT_FALSE(check_device_count(8).problem.has_value());
  EXPECT_FALSE(check_device_count(kMaxNvidiaDevices).problem.has_value());
  auto huge = check_device_count(4294967295u);
  EXPECT_EQ(huge.usable, kMaxNvidiaDevices);
  ASSERT_TRUE(huge.problem.has_value());
  EXPECT_NE(huge.problem->find("4294967295"), std::string::npos) << *huge.problem;
}

TEST(CheckMigDeviceCount, CapsAnAbsurdMaximum) {
  EXPECT_EQ(check_mig_device_count(7).usable, 7u);
  EXPECT_FALSE(check_mig_device_count(7).problem.has_value());
  auto huge = check_mig_device_count(100000);
  EXPECT_EQ(huge.usable, kMaxMigDevicesPerGpu);
  EXPECT_TRUE(huge.problem.has_value());
}

// Regression (issue 13 "Also"): duplicate UUIDs were served twice.
TEST(RepeatedPositions, FindsEveryRepeatAfterTheFirst) {
  EXPECT_TRUE(repeated_positions({"a", "b", "c"}).empty());
  EXPECT_EQ(repeated_positions({"a", "b", "a", "", "", "b", "a"}), (std::vector<size_t>{2, 5, 6}));
}

}  // namespace
}  // namespace kgpu
