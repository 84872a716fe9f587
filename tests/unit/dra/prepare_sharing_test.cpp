// NVIDIA's opaque device configs (resource.nvidia.com/v1beta1) and Kubernetes byte quantities.
#include <gtest/gtest.h>

#include "dra/prepare_sharing.h"
#include "unit/dra/claim_test_support.h"

namespace kgpu::dra {
namespace {

using nlohmann::json;
using testing::gpu_sharing;

DeviceConfig decode(const json& j) {
  auto c = parse_device_config(j);
  EXPECT_TRUE(c.ok()) << c.error().message;
  return c.ok() ? *c : DeviceConfig{};
}

std::string error_of(const json& j) {
  auto c = parse_device_config(j);
  EXPECT_FALSE(c.ok());
  return c.ok() ? "" : c.error().message;
}

TEST(DraSharingConfig, TimeSlicingWithEachInterval) {
  for (auto i : {TimeSliceInterval::Default, TimeSliceInterval::Short, TimeSliceInterval::Medium,
                 TimeSliceInterval::Long}) {
    const DeviceConfig c =
        decode(gpu_sharing({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", to_string(i)}}}}));
    EXPECT_EQ(c.kind, DeviceConfig::Kind::Gpu);
    EXPECT_EQ(c.sharing.strategy, DeviceSharing::Strategy::TimeSlicing);
    EXPECT_EQ(c.sharing.interval, i);
  }
  EXPECT_EQ(decode(gpu_sharing({{"strategy", "TimeSlicing"}})).sharing.interval, TimeSliceInterval::Default);
}

TEST(DraSharingConfig, MpsLimits) {
  const DeviceConfig c = decode(gpu_sharing(
      {{"strategy", "MPS"},
       {"mpsConfig",
        {{"defaultActiveThreadPercentage", 50},
         {"defaultPinnedDeviceMemoryLimit", "10Gi"},
         {"defaultPerDevicePinnedMemoryLimit", {{"0", "5Gi"}, {"GPU-abc", 1048576}}}}}}));
  EXPECT_EQ(c.sharing.strategy, DeviceSharing::Strategy::Mps);
  EXPECT_EQ(c.sharing.mps.active_thread_percentage, 50);
  EXPECT_EQ(c.sharing.mps.pinned_memory_bytes, uint64_t{10} << 30);
  EXPECT_EQ(c.sharing.mps.per_device_pinned,
            (std::map<std::string, uint64_t>{{"0", uint64_t{5} << 30}, {"GPU-abc", 1048576}}));
}

TEST(DraSharingConfig, MigConfigAndNoSharing) {
  EXPECT_EQ(decode(gpu_sharing({{"strategy", "MPS"}}, "MigDeviceConfig")).kind, DeviceConfig::Kind::Mig);
  const DeviceConfig plain = decode({{"apiVersion", "resource.nvidia.com/v1beta1"}, {"kind", "GpuConfig"}});
  EXPECT_EQ(plain.sharing.strategy, DeviceSharing::Strategy::Exclusive);
}

TEST(DraSharingConfig, StrictDecodingErrorsNameTheField) {
  struct Case {
    json parameters;
    std::string expected;
  };
  const std::vector<Case> cases = {
      {json::array(), "opaque parameters must be an object, not array"},
      {{{"apiVersion", "resource.nvidia.com/v1"}, {"kind", "GpuConfig"}}, "apiVersion must be resource.nvidia.com/v1beta1"},
      {{{"apiVersion", "resource.nvidia.com/v1beta1"}, {"kind", "VfioDeviceConfig"}}, "kind \"VfioDeviceConfig\" is not served"},
      {{{"apiVersion", "resource.nvidia.com/v1beta1"}, {"kind", "GpuConfig"}, {"extra", 1}}, "unknown field \"extra\""},
      {gpu_sharing({{"strategy", "Spatial"}}), "sharing.strategy must be TimeSlicing or MPS, not \"Spatial\""},
      {gpu_sharing({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Forever"}}}}),
       "timeSlicingConfig.interval must be Default, Short, Medium or Long, not \"Forever\""},
      {gpu_sharing({{"strategy", "TimeSlicing"}, {"mpsConfig", json::object()}}), "mpsConfig is set, but the strategy is TimeSlicing"},
      {gpu_sharing({{"strategy", "MPS"}, {"timeSlicingConfig", json::object()}}), "timeSlicingConfig is set, but the strategy is MPS"},
      {gpu_sharing({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Long"}}}}, "MigDeviceConfig"),
       "unknown field \"timeSlicingConfig\""},
      {gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultActiveThreadPercentage", 0}}}}),
       "defaultActiveThreadPercentage must be a whole number from 1 to 100"},
      {gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultActiveThreadPercentage", "50"}}}}),
       "defaultActiveThreadPercentage must be a whole number from 1 to 100"},
      {gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultPinnedDeviceMemoryLimit", "ten"}}}}),
       "defaultPinnedDeviceMemoryLimit: quantity \"ten\" does not start with a number"},
      {gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultPinnedDeviceMemoryLimit", -5}}}}),
       "defaultPinnedDeviceMemoryLimit must be a positive whole number"},
      {gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultPerDevicePinnedMemoryLimit", {{"0", "0"}}}}}}),
       "defaultPerDevicePinnedMemoryLimit[\"0\"] must be more than 0"},
      {gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"limit", 1}}}}), "mpsConfig: unknown field \"limit\""},
  };
  for (const auto& c : cases) {
    const std::string message = error_of(c.parameters);
    EXPECT_NE(message.find(c.expected), std::string::npos) << "got: " << message << "\nwanted: " << c.expected;
  }
}

TEST(DraSharingConfig, Quantities) {
  struct Case {
    const char* text;
    uint64_t bytes;
  };
  constexpr uint64_t Ki = 1024;
  for (const Case& c : {Case{"0", 0}, Case{"1", 1}, Case{"+7", 7}, Case{"10Gi", 10 * Ki * Ki * Ki},
                        Case{"1.5G", 1500000000}, Case{"512Mi", 512 * Ki * Ki}, Case{"0.5Ki", 512},
                        Case{"1.0001k", 1001}, Case{"2k", 2000}, Case{"1Ei", Ki * Ki * Ki * Ki * Ki * Ki},
                        Case{"3Ti", 3 * Ki * Ki * Ki * Ki}, Case{"1P", 1000000000000000}}) {
    auto b = parse_quantity_bytes(c.text);
    ASSERT_TRUE(b.ok()) << c.text << ": " << b.error().message;
    EXPECT_EQ(*b, c.bytes) << c.text;
  }
  for (const char* bad : {"", "-1", "Gi", "1GB", "1e3", "1..5", "10 Gi", "99999999999999999999999", "8Ei", "1.2.3"}) {
    auto b = parse_quantity_bytes(bad);
    EXPECT_FALSE(b.ok()) << bad << " -> " << (b.ok() ? *b : 0);
  }
}

}  // namespace
}  // namespace kgpu::dra
