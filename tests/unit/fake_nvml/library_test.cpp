// The library as a consumer sees it: symbols, init/shutdown reference counting, error strings, and
// how it reports a missing or broken fleet.
#include <gmock/gmock.h>

#include "nvml_under_test.h"

namespace kgpu::fake_nvml::testing {
namespace {

using ::testing::HasSubstr;

TEST(FakeNvmlLibrary, ExportsEveryEntryPointConsumersCall) {
  // §8 of the device-plugin reference plus the kgpu binding's table, versioned and unversioned.
  for (const char* name :
       {"nvmlInit", "nvmlInit_v2", "nvmlInitWithFlags", "nvmlShutdown", "nvmlErrorString", "nvmlSystemGetDriverVersion",
        "nvmlSystemGetCudaDriverVersion", "nvmlSystemGetCudaDriverVersion_v2", "nvmlDeviceGetCount", "nvmlDeviceGetCount_v2",
        "nvmlDeviceGetHandleByIndex", "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByUUID",
        "nvmlDeviceGetHandleByPciBusId", "nvmlDeviceGetHandleByPciBusId_v2", "nvmlDeviceGetName", "nvmlDeviceGetUUID",
        "nvmlDeviceGetSerial", "nvmlDeviceGetMinorNumber", "nvmlDeviceGetIndex", "nvmlDeviceGetPciInfo",
        "nvmlDeviceGetPciInfo_v2", "nvmlDeviceGetPciInfo_v3", "nvmlDeviceGetMemoryInfo",
        "nvmlDeviceGetCudaComputeCapability", "nvmlDeviceGetArchitecture", "nvmlDeviceGetBrand", "nvmlDeviceGetMigMode",
        "nvmlDeviceGetMaxMigDeviceCount", "nvmlDeviceGetMigDeviceHandleByIndex", "nvmlDeviceIsMigDeviceHandle",
        "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", "nvmlDeviceGetGpuInstanceId", "nvmlDeviceGetComputeInstanceId",
        "nvmlDeviceGetAttributes", "nvmlDeviceGetAttributes_v2", "nvmlDeviceGetNumGpuCores", "nvmlDeviceGetGpuInstanceProfileInfo",
        "nvmlDeviceGetGpuInstanceById", "nvmlDeviceGetGpuInstances", "nvmlGpuInstanceGetInfo",
        "nvmlGpuInstanceGetComputeInstanceById", "nvmlGpuInstanceGetComputeInstanceProfileInfo",
        "nvmlComputeInstanceGetInfo", "nvmlComputeInstanceGetInfo_v2", "nvmlDeviceGetTopologyCommonAncestor",
        "nvmlDeviceGetNvLinkState", "nvmlDeviceGetNvLinkRemotePciInfo", "nvmlDeviceGetNvLinkRemotePciInfo_v2",
        "nvmlDeviceGetGpuFabricInfo", "nvmlDeviceGetGpuFabricInfoV", "nvmlDeviceGetSupportedEventTypes",
        "nvmlEventSetCreate", "nvmlDeviceRegisterEvents", "nvmlEventSetWait", "nvmlEventSetWait_v2", "nvmlEventSetFree"}) {
    EXPECT_NE(dlsym(library(), name), nullptr) << name;
  }
}

TEST(FakeNvmlLibrary, HidesEverythingButNvmlSymbols) {
  ASSERT_NE(library(), nullptr) << dlerror();
  // Neither our C++ nor yaml-cpp may leak into the consumer's symbol namespace.
  EXPECT_EQ(dlsym(library(), "_ZN4kgpu9fake_nvml14base_call_nameERKNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEEE"),
            nullptr);
  EXPECT_EQ(dlsym(library(), "_ZN4kgpu9fake_nvml14init_libraryEj"), nullptr);
  // Functions a newer driver has and this one does not: absent, so probing consumers fall back.
  EXPECT_EQ(dlsym(library(), "nvmlDeviceGetPlatformInfo"), nullptr);
}

TEST(FakeNvmlLibrary, ErrorStringNamesEveryCode) {
  auto error_string = sym<nvmlErrorString_fn>("nvmlErrorString");
  EXPECT_STREQ(error_string(NVML_SUCCESS), "Success");
  EXPECT_THAT(error_string(NVML_ERROR_GPU_IS_LOST), HasSubstr("lost"));
  EXPECT_THAT(error_string(NVML_ERROR_TIMEOUT), HasSubstr("Timeout"));
  EXPECT_NE(std::string(error_string(NVML_ERROR_NOT_FOUND)), error_string(NVML_ERROR_NOT_SUPPORTED));
  // Codes it has never heard of still get a string: go-nvml stringifies whatever it receives.
  EXPECT_NE(error_string(static_cast<nvmlReturn_t>(12345)), nullptr);
}

class FakeNvmlInit : public NvmlTest {};

TEST_F(FakeNvmlInit, WithoutAFleetBehavesAsANodeWithoutDriver) {
  unsetenv("KGPU_FAKE_NVML_FLEET");
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(sym<nvmlInit_fn>("nvmlInit_v2")(), NVML_ERROR_DRIVER_NOT_LOADED);
  EXPECT_THAT(::testing::internal::GetCapturedStderr(), HasSubstr("KGPU_FAKE_NVML_FLEET"));
  unsigned count = 0;
  EXPECT_EQ(sym<nvmlDeviceGetCount_fn>("nvmlDeviceGetCount_v2")(&count), NVML_ERROR_UNINITIALIZED);
}

TEST_F(FakeNvmlInit, InitIsReferenceCounted) {
  setenv("KGPU_FAKE_NVML_FLEET", fleet_path("pcie-t4x2").c_str(), 1);
  auto init = sym<nvmlInit_fn>("nvmlInit");
  auto init_v2 = sym<nvmlInit_fn>("nvmlInit_v2");
  auto init_flags = sym<nvmlInitWithFlags_fn>("nvmlInitWithFlags");
  auto shutdown = sym<nvmlShutdown_fn>("nvmlShutdown");
  auto count = sym<nvmlDeviceGetCount_fn>("nvmlDeviceGetCount_v2");
  ASSERT_EQ(init_v2(), NVML_SUCCESS);
  ASSERT_EQ(init(), NVML_SUCCESS);
  ASSERT_EQ(init_flags(NVML_INIT_FLAG_NO_GPUS), NVML_SUCCESS);
  unsigned n = 0;
  for (int open = 3; open > 0; --open) {
    EXPECT_EQ(count(&n), NVML_SUCCESS) << "still " << open << " references";
    EXPECT_EQ(n, 2u);
    EXPECT_EQ(shutdown(), NVML_SUCCESS);
  }
  EXPECT_EQ(count(&n), NVML_ERROR_UNINITIALIZED);
  EXPECT_EQ(shutdown(), NVML_ERROR_UNINITIALIZED);
}

TEST_F(FakeNvmlInit, ReinitReadsTheFleetAgainAndRejectsStaleHandles) {
  ASSERT_EQ(init_with(fleet_path("pcie-t4x2")), NVML_SUCCESS);
  nvmlDevice_t old_handle = device(0);
  ASSERT_EQ(sym<nvmlShutdown_fn>("nvmlShutdown")(), NVML_SUCCESS);
  --initialised_;
  ASSERT_EQ(init_with(fleet_path("dgx-a100")), NVML_SUCCESS);
  unsigned n = 0;
  ASSERT_EQ(sym<nvmlDeviceGetCount_fn>("nvmlDeviceGetCount_v2")(&n), NVML_SUCCESS);
  EXPECT_EQ(n, 8u);
  char buf[96];
  EXPECT_EQ(sym<nvmlDeviceGetName_fn>("nvmlDeviceGetName")(old_handle, buf, sizeof buf), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(FakeNvmlInit, ConfiguredInitFailureIsReturned) {
  auto fleet = dir_.file("fail.yaml", R"(node: {driver_version: "550.54.15", cuda_driver_version: 12040}
failures: {init: NVML_ERROR_LIB_RM_VERSION_MISMATCH}
gpus: []
)");
  EXPECT_EQ(init_with(fleet), NVML_ERROR_LIB_RM_VERSION_MISMATCH);
}

struct BadFleet {
  const char* label;
  const char* yaml;
  const char* line;   // "file:LINE:"
  const char* field;  // the field path the message must name
  const char* words;  // and what is wrong
};

void PrintTo(const BadFleet& bad, std::ostream* os) { *os << bad.label; }

class FakeNvmlBadFleet : public NvmlTest, public ::testing::WithParamInterface<BadFleet> {};

TEST_P(FakeNvmlBadFleet, InitFailsNamingFileLineAndField) {
  const BadFleet& bad = GetParam();
  auto fleet = dir_.file("bad.yaml", bad.yaml);
  ::testing::internal::CaptureStderr();
  EXPECT_EQ(init_with(fleet), NVML_ERROR_UNKNOWN);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_THAT(err, HasSubstr(fleet + ":" + bad.line + ":"));
  EXPECT_THAT(err, HasSubstr(bad.field));
  EXPECT_THAT(err, HasSubstr(bad.words));
}

constexpr const char* kGpuHead = R"(node: {driver_version: "550.54.15", cuda_driver_version: 12040}
gpus:
  - uuid: GPU-11111111-2222-3333-4444-555555555555
    name: NVIDIA A100-SXM4-40GB
    architecture: ampere
    compute_capability: "8.0"
    memory: {total_mib: 40960}
)";

std::string with_head(const std::string& tail) { return std::string(kGpuHead) + tail; }

const std::string kUnknownField = with_head("    pci: {bus_id: \"0000:07:00.0\", device_id: 0x20B0}\n    colour: green\n");
const std::string kBadBus = with_head("    pci: {bus_id: \"07-00\", device_id: 0x20B0}\n");
const std::string kMissingPci = with_head("");
const std::string kOverlap = with_head(R"(    pci: {bus_id: "0000:07:00.0", device_id: 0x20B0}
    mig:
      mode: enabled
      profiles: a100-40gb
      instances:
        - {profile: 3g.20gb, placement: 0}
        - {profile: 2g.10gb, placement: 2}
)");
const std::string kUnknownProfile = with_head(R"(    pci: {bus_id: "0000:07:00.0", device_id: 0x20B0}
    mig:
      mode: enabled
      profiles: a100-40gb
      instances:
        - {profile: 5g.25gb}
)");
const std::string kBadCode = R"(node: {driver_version: "550.54.15", cuda_driver_version: 12040}
failures: {init: NVML_ERROR_BANANA}
gpus: []
)";
const std::string kSyntax = "node: {driver_version: \"1\"\ngpus: [\n";

INSTANTIATE_TEST_SUITE_P(
    Errors, FakeNvmlBadFleet,
    ::testing::Values(BadFleet{"unknown_field", kUnknownField.c_str(), "9", "gpus[0].colour", "unknown field"},
                      BadFleet{"bad_bus_id", kBadBus.c_str(), "8", "gpus[0].pci.bus_id", "not a PCI bus id"},
                      BadFleet{"missing_pci", kMissingPci.c_str(), "3", "gpus[0].pci", "bus_id"},
                      BadFleet{"mig_overlap", kOverlap.c_str(), "14", "placement", "overlaps"},
                      BadFleet{"unknown_profile", kUnknownProfile.c_str(), "13", "profile", "5g.25gb"},
                      BadFleet{"unknown_code", kBadCode.c_str(), "2", "failures.init", "NVML_ERROR_BANANA"},
                      BadFleet{"yaml_syntax", kSyntax.c_str(), "2", "", "YAML syntax error"}),
    [](const ::testing::TestParamInfo<BadFleet>& p) { return std::string(p.param.label); });

}  // namespace
}  // namespace kgpu::fake_nvml::testing
