#include "nvml/mig_facts.h"

#include <gtest/gtest.h>

#include "nvml/backoff.h"
#include "nvml/nvml_abi.h"

namespace kgpu {
namespace {

constexpr uint64_t kMiB = 1024ULL * 1024;

TEST(MigProfileName, NamesA100FortyGigabyteProfiles) {
  const uint64_t gpu = 40960 * kMiB;
  EXPECT_EQ(mig_profile_name(1, 1, 4864, gpu, NVML_GPU_INSTANCE_PROFILE_1_SLICE), "1g.5gb");
  EXPECT_EQ(mig_profile_name(2, 2, 9856, gpu, NVML_GPU_INSTANCE_PROFILE_2_SLICE), "2g.10gb");
  EXPECT_EQ(mig_profile_name(3, 3, 19968, gpu, NVML_GPU_INSTANCE_PROFILE_3_SLICE), "3g.20gb");
  EXPECT_EQ(mig_profile_name(7, 7, 40192, gpu, NVML_GPU_INSTANCE_PROFILE_7_SLICE), "7g.40gb");
}

TEST(MigProfileName, ComputeInstanceSmallerThanGpuInstanceGetsCPrefix) {
  EXPECT_EQ(mig_profile_name(3, 1, 19968, 40960 * kMiB, NVML_GPU_INSTANCE_PROFILE_3_SLICE), "1c.3g.20gb");
}

TEST(MigProfileName, MediaExtensionProfilesGetSuffix) {
  EXPECT_EQ(mig_profile_name(1, 1, 9856, 81920 * kMiB, NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1), "1g.10gb+me");
  EXPECT_EQ(mig_profile_name(1, 1, 19968, 81920 * kMiB, NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2), "1g.20gb");
  EXPECT_EQ(mig_profile_name(1, 1, 9856, 81920 * kMiB, std::nullopt), "1g.10gb");
}

// NVIDIA v0.20 (go-nvlib): -me, +me.all and +gfx profiles are their own resources (issue 41).
TEST(MigProfileName, NewerProfilesGetNvidiasSuffixes) {
  const uint64_t gpu = 196608 * kMiB;  // a 192 GB GPU: 1/8 is 24 GB
  EXPECT_EQ(mig_profile_name(1, 1, 24576, gpu, NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME), "1g.24gb+me.all");
  EXPECT_EQ(mig_profile_name(2, 2, 49152, gpu, NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME), "2g.48gb+me.all");
  EXPECT_EQ(mig_profile_name(1, 1, 24576, gpu, NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX), "1g.24gb+gfx");
  EXPECT_EQ(mig_profile_name(4, 4, 98304, gpu, NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX), "4g.96gb+gfx");
  EXPECT_EQ(mig_profile_name(1, 1, 24576, gpu, NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME), "1g.24gb-me");
  EXPECT_EQ(mig_profile_name(2, 2, 49152, gpu, NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME), "2g.48gb-me");
  EXPECT_EQ(mig_profile_name(1, 1, 24576, gpu, NVML_GPU_INSTANCE_PROFILE_1_SLICE), "1g.24gb");
}

TEST(MigMinors, ParsesGiAndCiAccessLines) {
  auto parsed = MigMinors::parse("config 1\nmonitor 2\ngpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\n"
                                 "gpu1/gi7/access 201\ngpu1/gi7/ci0/access 202\n\n");
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  const MigMinors& minors = *parsed;
  EXPECT_EQ(minors.gpu_instance(0, 1), 12);
  EXPECT_EQ(minors.compute_instance(0, 1, 0), 13);
  EXPECT_EQ(minors.gpu_instance(1, 7), 201);
  EXPECT_FALSE(minors.gpu_instance(2, 1).has_value());
  auto nodes = mig_capability_nodes(minors, 1, 7, 0);
  ASSERT_TRUE(nodes.has_value());
  ASSERT_EQ(nodes->size(), 2u);
  EXPECT_EQ((*nodes)[0].path, "/dev/nvidia-caps/nvidia-cap201");
  EXPECT_EQ((*nodes)[1].path, "/dev/nvidia-caps/nvidia-cap202");
  EXPECT_FALSE(mig_capability_nodes(minors, 1, 7, 1).has_value());
}

// Regression (issue 20 item 10): a repeated line silently won (last one), so a planted or broken
// "gpu0/gi1/access 1" handed containers the MIG config capability; an out-of-range minor was
// passed through. Each is now an error naming the line.
TEST(MigMinors, RepeatedNamesOrMinorsAreErrors) {
  auto twice = MigMinors::parse("config 1\ngpu0/gi1/access 12\ngpu0/gi1/ci0/access 13\ngpu0/gi1/access 14\n");
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.error().message.find("gpu0/gi1/access appears twice"), std::string::npos) << twice.error().message;
  EXPECT_NE(twice.error().message.find("line 4"), std::string::npos) << twice.error().message;
  auto config_minor = MigMinors::parse("config 1\nmonitor 2\ngpu0/gi1/access 1\n");
  ASSERT_FALSE(config_minor.ok());
  EXPECT_NE(config_minor.error().message.find("minor 1 is also config"), std::string::npos)
      << config_minor.error().message;
}

TEST(MigMinors, OutOfRangeOrMalformedMinorsAreErrors) {
  for (const char* text : {"gpu0/gi1/access 2147483647\n", "gpu0/gi1/access 1048576\n", "gpu0/gi1/access -3\n",
                           "gpu0/gi1/access 12x\n", "gpu0/gi1/access\n", "gpu0/gi1/access 1 2\n",
                           "gpu0/gi1/access 99999999999999999999\n", "broken line\n"}) {
    auto parsed = MigMinors::parse(text);
    EXPECT_FALSE(parsed.ok()) << text;
  }
  auto max = MigMinors::parse("gpu0/gi1/access 1048575\n");
  ASSERT_TRUE(max.ok()) << max.error().message;
  EXPECT_EQ(max->gpu_instance(0, 1), kMaxCapabilityMinor);
  EXPECT_TRUE(MigMinors::parse("").ok());
}

TEST(ArchitectureName, FromNvmlOrComputeCapability) {
  EXPECT_EQ(architecture_name(NVML_DEVICE_ARCH_AMPERE, 8, 0), "ampere");
  EXPECT_EQ(architecture_name(NVML_DEVICE_ARCH_HOPPER, 9, 0), "hopper");
  EXPECT_EQ(architecture_name(NVML_DEVICE_ARCH_ADA, 8, 9), "ada-lovelace");
  EXPECT_EQ(architecture_name(NVML_DEVICE_ARCH_UNKNOWN, 7, 5), "turing");
  EXPECT_EQ(architecture_name(NVML_DEVICE_ARCH_UNKNOWN, 7, 0), "volta");
  EXPECT_EQ(architecture_name(NVML_DEVICE_ARCH_UNKNOWN, 12, 0), "blackwell");
  EXPECT_EQ(architecture_name(NVML_DEVICE_ARCH_UNKNOWN, 0, 0), "");
}

TEST(BrandAndLevel, MapNvmlEnums) {
  EXPECT_EQ(brand_name(NVML_BRAND_TESLA), "tesla");
  EXPECT_EQ(brand_name(NVML_BRAND_NVIDIA), "nvidia");
  EXPECT_EQ(brand_name(NVML_BRAND_UNKNOWN), "");
  EXPECT_EQ(pcie_level(NVML_TOPOLOGY_SINGLE), PcieLevel::SingleSwitch);
  EXPECT_EQ(pcie_level(NVML_TOPOLOGY_SYSTEM), PcieLevel::CrossSocket);
  EXPECT_EQ(pcie_level(7), PcieLevel::Unknown);
}

TEST(Backoff, DoublesUpToTheCapAndResets) {
  using std::chrono::milliseconds;
  Backoff b(milliseconds(100), milliseconds(350));
  EXPECT_EQ(b.next(), milliseconds(100));
  EXPECT_EQ(b.next(), milliseconds(200));
  EXPECT_EQ(b.next(), milliseconds(350));
  EXPECT_EQ(b.next(), milliseconds(350));
  b.reset();
  EXPECT_EQ(b.next(), milliseconds(100));
}

}  // namespace
// A whole GPU's SMs from its CUDA cores, as CUDA counts them: the H100 this was checked on answered
// nvmlDeviceGetNumGpuCores 16896 and CUDA reported 132 SMs; an A100 has 6912 cores in 108 SMs.
TEST(SmsFromCores, CoresPerSmFollowTheComputeCapability) {
  EXPECT_EQ(sms_from_cores(16896, 9, 0), 132);
  EXPECT_EQ(sms_from_cores(6912, 8, 0), 108);
  EXPECT_EQ(sms_from_cores(7424, 8, 9), 58);   // L4: 128 a SM
  EXPECT_EQ(sms_from_cores(2560, 7, 5), 40);   // T4: 64 a SM
  EXPECT_EQ(sms_from_cores(3584, 6, 0), 56);   // P100: 64
  EXPECT_EQ(sms_from_cores(3584, 6, 1), 28);   // GP102: 128
  EXPECT_EQ(sms_from_cores(2880, 3, 5), 15);   // K40: 192
  EXPECT_EQ(sms_from_cores(0, 9, 0), 0);
  EXPECT_EQ(sms_from_cores(100, 9, 0), 0);     // not a whole number of SMs
  EXPECT_EQ(sms_from_cores(256, 2, 0), 0);     // before CUDA's table
}

}  // namespace kgpu
