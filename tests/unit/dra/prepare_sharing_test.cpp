// NVIDIA's opaque device configs (resource.nvidia.com/v1beta1) and Kubernetes byte quantities.
#include <gtest/gtest.h>

#include "dra/sharing/prepare_sharing.h"
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
      {gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultActiveThreadPercentage", 101}}}}),
       "defaultActiveThreadPercentage must be a whole number from 0 to 100"},
      {gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultActiveThreadPercentage", -1}}}}),
       "defaultActiveThreadPercentage must be a whole number from 0 to 100"},
      {gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultActiveThreadPercentage", "50"}}}}),
       "defaultActiveThreadPercentage must be a whole number from 0 to 100"},
      {gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultPinnedDeviceMemoryLimit", "ten"}}}}),
       "defaultPinnedDeviceMemoryLimit: quantity \"ten\" has no digits"},
      {gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultPinnedDeviceMemoryLimit", -5}}}}),
       "defaultPinnedDeviceMemoryLimit: quantity \"-5\" is negative"},
      {gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultPerDevicePinnedMemoryLimit", {{"0", "0"}}}}}}),
       "defaultPerDevicePinnedMemoryLimit[\"0\"] is \"0\" (0 bytes): under the 1Mi"},
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
  for (const char* bad : {"", "-1", "Gi", "1GB", "1..5", "10 Gi", "99999999999999999999999", "8Ei", "1.2.3"}) {
    auto b = parse_quantity_bytes(bad);
    EXPECT_FALSE(b.ok()) << bad << " -> " << (b.ok() ? *b : 0);
  }
}

// Issue 29, item 6: every form k8s.io/apimachinery's ParseQuantity takes, as Quantity.Value()
// gives it (fractions of a byte rounded up).
TEST(DraSharingConfig, QuantitiesInEveryKubernetesForm) {
  struct Case {
    const char* text;
    uint64_t bytes;
  };
  constexpr uint64_t Ki = 1024;
  for (const Case& c : {Case{"1e9", 1000000000}, Case{"1E9", 1000000000}, Case{"1e+9", 1000000000},
                        Case{"1.5e3", 1500}, Case{"5e-1", 1}, Case{"1e0", 1}, Case{"0e99", 0}, Case{"1e-999999", 1},
                        Case{"1Gi", Ki * Ki * Ki}, Case{"500M", 500000000}, Case{"0.5Gi", Ki * Ki * Ki / 2},
                        Case{".5Ki", 512}, Case{"5.", 5}, Case{"0.3Ki", 308}, Case{"000012Mi", 12 * Ki * Ki},
                        Case{"100m", 1}, Case{"1000m", 1}, Case{"1500m", 2}, Case{"1n", 1}, Case{"3u", 1},
                        Case{"-0", 0}, Case{"-0.0Gi", 0}, Case{"+1k", 1000}, Case{"1E", 1000000000000000000},
                        Case{"7Ei", 7 * Ki * Ki * Ki * Ki * Ki * Ki},
                        Case{"0.000000000000000000000000001Gi", 1},
                        Case{"123456789012345678901234567890e-20", 1234567891},
                        Case{"9223372036854775807", 9223372036854775807ull},
                        Case{"9.223372036854775807E", 9223372036854775807ull}}) {
    auto b = parse_quantity_bytes(c.text);
    ASSERT_TRUE(b.ok()) << c.text << ": " << b.error().message;
    EXPECT_EQ(*b, c.bytes) << c.text;
  }
  struct Bad {
    const char* text;
    const char* error;
  };
  for (const Bad& c : {Bad{"1.5.3Gi", "\".3Gi\" is left over"}, Bad{"-1Gi", "is negative"},
                       Bad{"-100m", "is negative"}, Bad{"1K", "unknown suffix \"K\""}, Bad{"1e", "unknown suffix \"e\""},
                       Bad{"1ee3", "unknown suffix \"ee3\""}, Bad{"1Gi5", "unknown suffix \"Gi5\""},
                       Bad{"1GB", "\"B\" is left over"}, Bad{"10 Gi", "\" Gi\" is left over"},
                       Bad{" 1Gi", "has no digits"}, Bad{"0x10", "\"x10\" is left over"},
                       Bad{"1e3.5", "\".5\" is left over"}, Bad{"Gi", "has no digits"}, Bad{".", "has no digits"},
                       Bad{"+", "has no digits"}, Bad{"--1", "has no digits"}, Bad{"8Ei", "larger than 9223372036854775807"},
                       Bad{"10E", "larger than"}, Bad{"1e99", "larger than"}, Bad{"9223372036854775808", "larger than"},
                       Bad{"99999999999999999999999", "larger than"}, Bad{"1e2147483648", "exponent out of range"},
                       Bad{"", "quantity is empty"}}) {
    auto b = parse_quantity_bytes(c.text);
    ASSERT_FALSE(b.ok()) << c.text << " -> " << *b;
    EXPECT_NE(b.error().message.find(c.error), std::string::npos) << c.text << ": " << b.error().message;
  }
}

// A limit as NVIDIA's decoder reads the Quantity field (string trimmed, or a JSON number by its
// text), then NVIDIA's "value set too low": under 1 MiB is refused.
TEST(DraSharingConfig, MpsLimitsTakeEveryQuantityFormAndAtLeastOneMebibyte) {
  auto limit = [](const json& value) {
    return gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultPinnedDeviceMemoryLimit", value}}}});
  };
  EXPECT_EQ(decode(limit("1e9")).sharing.mps.pinned_memory_bytes, 1000000000u);
  EXPECT_EQ(decode(limit(1e9)).sharing.mps.pinned_memory_bytes, 1000000000u);  // a JSON float
  EXPECT_EQ(decode(limit(1073741824)).sharing.mps.pinned_memory_bytes, uint64_t{1} << 30);
  EXPECT_EQ(decode(limit(" 0.5Gi ")).sharing.mps.pinned_memory_bytes, uint64_t{1} << 29);
  EXPECT_EQ(decode(limit("1Mi")).sharing.mps.pinned_memory_bytes, uint64_t{1} << 20);
  EXPECT_NE(error_of(limit("100m")).find("defaultPinnedDeviceMemoryLimit is \"100m\" (1 bytes): under the 1Mi"),
            std::string::npos);
  EXPECT_NE(error_of(limit("1M")).find("under the 1Mi"), std::string::npos);  // 1000000 bytes: 0 MiB
  EXPECT_NE(error_of(limit("-1Gi")).find("is negative"), std::string::npos);
  EXPECT_NE(error_of(limit(-1.5)).find("is negative"), std::string::npos);
  EXPECT_NE(error_of(limit("1.5.3Gi")).find("left over"), std::string::npos);
  EXPECT_NE(error_of(limit(true)).find("must be a quantity such as \"10Gi\", not boolean"), std::string::npos);
}

TEST(DraSharingConfig, ZeroActiveThreadPercentageIsASetting) {
  const DeviceConfig c =
      decode(gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultActiveThreadPercentage", 0}}}}));
  EXPECT_EQ(c.sharing.mps.active_thread_percentage, 0);
  EXPECT_EQ(decode(gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultActiveThreadPercentage", 100}}}}))
                .sharing.mps.active_thread_percentage,
            100);
  EXPECT_FALSE(decode(gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultActiveThreadPercentage", nullptr}}}}))
                   .sharing.mps.active_thread_percentage);
}

// NVIDIA's Normalize gives a TimeSlicing sharing without timeSlicingConfig interval Default; a
// timeSlicingConfig without an interval crashes its Validate (nil pointer), "" is no interval.
TEST(DraSharingConfig, MissingTimeSlicingConfigIsDefaultButAnEmptyOneIsRefused) {
  EXPECT_EQ(decode(gpu_sharing({{"strategy", "TimeSlicing"}})).sharing.interval, TimeSliceInterval::Default);
  EXPECT_EQ(decode(gpu_sharing({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", nullptr}})).sharing.interval,
            TimeSliceInterval::Default);
  EXPECT_NE(error_of(gpu_sharing({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", json::object()}}))
                .find("timeSlicingConfig.interval is missing"),
            std::string::npos);
  EXPECT_NE(error_of(gpu_sharing({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", nullptr}}}}))
                .find("timeSlicingConfig.interval is missing"),
            std::string::npos);
  EXPECT_NE(error_of(gpu_sharing({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", ""}}}}))
                .find("interval must be Default, Short, Medium or Long, not \"\""),
            std::string::npos);
}

// NVIDIA's MpsPerDevicePinnedMemoryLimit.Normalize: keys are UUIDs of the config's devices or
// indexes into them sorted by UUID.
TEST(DraSharingConfig, PerDeviceKeysAreUuidsOrIndexesInUuidOrder) {
  constexpr uint64_t Gi = uint64_t{1} << 30;
  MpsConfig mps;
  mps.pinned_memory_bytes = 4 * Gi;
  mps.per_device_pinned = {{"0", 1 * Gi}, {"GPU-b", 2 * Gi}};
  const std::vector<std::string> devices = {"GPU-c", "GPU-a", "GPU-b"};  // not in UUID order
  auto limits = mps_pinned_limits(mps, devices);
  ASSERT_TRUE(limits.ok()) << limits.error().message;
  EXPECT_EQ(*limits, (std::map<std::string, uint64_t>{{"GPU-a", 1 * Gi}, {"GPU-b", 2 * Gi}, {"GPU-c", 4 * Gi}}));

  // strconv.Atoi's integers: a sign and leading zeros are fine.
  for (const char* key : {"2", "+2", "002"}) {
    mps.per_device_pinned = {{key, 1 * Gi}};
    limits = mps_pinned_limits(mps, devices);
    ASSERT_TRUE(limits.ok()) << key << ": " << limits.error().message;
    EXPECT_EQ(limits->at("GPU-c"), 1 * Gi) << key;
  }
  mps.per_device_pinned = {{"-0", 1 * Gi}};
  EXPECT_EQ(mps_pinned_limits(mps, devices)->at("GPU-a"), 1 * Gi);

  struct Bad {
    const char* key;
    const char* error;
  };
  for (const Bad& c : {Bad{"3", "key \"3\" is not an index into the 3 device(s) this config applies to (0..2, in UUID order)"},
                       Bad{"-1", "key \"-1\" is not an index"},
                       Bad{"GPU-z", "key \"GPU-z\" is neither the UUID of a device this config applies to nor an index"},
                       Bad{"1.0", "key \"1.0\" is neither"}, Bad{" 1", "key \" 1\" is neither"},
                       Bad{"", "key \"\" is neither"}, Bad{"99999999999999999999", "key \"99999999999999999999\" is out of range"}}) {
    mps.per_device_pinned = {{c.key, 1 * Gi}};
    auto bad = mps_pinned_limits(mps, devices);
    ASSERT_FALSE(bad.ok()) << c.key;
    EXPECT_NE(bad.error().message.find(c.error), std::string::npos) << bad.error().message;
  }
  // Two keys for one device: the same limit is fine; different ones depend on Go's map order in
  // NVIDIA's driver, and are refused here.
  mps.per_device_pinned = {{"1", 1 * Gi}, {"GPU-b", 1 * Gi}};
  EXPECT_TRUE(mps_pinned_limits(mps, devices).ok());
  mps.per_device_pinned = {{"1", 1 * Gi}, {"GPU-b", 2 * Gi}};
  EXPECT_NE(mps_pinned_limits(mps, devices).error().message.find("both name GPU-b, with different limits"),
            std::string::npos);
  // No default: only the named device has a limit.
  mps.pinned_memory_bytes.reset();
  mps.per_device_pinned = {{"1", 1 * Gi}};
  EXPECT_EQ(*mps_pinned_limits(mps, devices), (std::map<std::string, uint64_t>{{"GPU-b", 1 * Gi}}));
}

}  // namespace
}  // namespace kgpu::dra
