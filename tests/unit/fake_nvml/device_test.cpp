// Device enumeration and per-device answers, checked against the values written in the shipped
// fleet files (tests/fixtures/fleets/*.yaml).
#include <gmock/gmock.h>

#include <cstring>
#include <set>

#include "nvml_under_test.h"

namespace kgpu::fake_nvml::testing {
namespace {

class FakeNvmlDevices : public NvmlTest {};

TEST_F(FakeNvmlDevices, EveryShippedFleetLoads) {
  const std::pair<const char*, unsigned> fleets[] = {{"dgx-a100", 8},       {"hgx-h100", 8},        {"pcie-t4x2", 2},
                                                     {"a100-mig-mixed", 4}, {"a100-mig-single", 2}, {"pcie-l4x4-pairs", 4},
                                                     {"hgx-16", 16},        {"empty", 0}};
  for (const auto& [fleet, expected] : fleets) {
    ASSERT_EQ(init_with(fleet_path(fleet)), NVML_SUCCESS) << fleet;
    unsigned n = 99;
    EXPECT_EQ(sym<nvmlDeviceGetCount_fn>("nvmlDeviceGetCount")(&n), NVML_SUCCESS);
    EXPECT_EQ(n, expected) << fleet;
    ASSERT_EQ(sym<nvmlShutdown_fn>("nvmlShutdown")(), NVML_SUCCESS);
    --initialised_;
  }
}

TEST_F(FakeNvmlDevices, DgxA100IdentityMatchesTheFleetFile) {
  ASSERT_EQ(init_with(fleet_path("dgx-a100")), NVML_SUCCESS);
  char buf[96];
  ASSERT_EQ(sym<nvmlSystemGetDriverVersion_fn>("nvmlSystemGetDriverVersion")(buf, sizeof buf), NVML_SUCCESS);
  EXPECT_STREQ(buf, "550.54.15");
  EXPECT_EQ(sym<nvmlSystemGetDriverVersion_fn>("nvmlSystemGetDriverVersion")(buf, 5), NVML_ERROR_INSUFFICIENT_SIZE);
  int cuda = 0;
  ASSERT_EQ(sym<nvmlSystemGetCudaDriverVersion_fn>("nvmlSystemGetCudaDriverVersion")(&cuda), NVML_SUCCESS);
  EXPECT_EQ(cuda, 12040);
  ASSERT_EQ(sym<nvmlSystemGetCudaDriverVersion_fn>("nvmlSystemGetCudaDriverVersion_v2")(&cuda), NVML_SUCCESS);
  EXPECT_EQ(cuda, 12040);

  nvmlDevice_t d3 = device(3);
  EXPECT_EQ(name(d3), "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(uuid(d3), "GPU-a3b4c5d6-e7f8-4a9b-8c0d-3e4f5a6b7c43");
  ASSERT_EQ(sym<nvmlDeviceGetSerial_fn>("nvmlDeviceGetSerial")(d3, buf, sizeof buf), NVML_SUCCESS);
  EXPECT_STREQ(buf, "1562320010043");
  unsigned value = 0;
  ASSERT_EQ(sym<nvmlDeviceGetMinorNumber_fn>("nvmlDeviceGetMinorNumber")(d3, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 3u);
  ASSERT_EQ(sym<nvmlDeviceGetIndex_fn>("nvmlDeviceGetIndex")(d3, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 3u);
  ASSERT_EQ(sym<nvmlDeviceGetNumaNodeId_fn>("nvmlDeviceGetNumaNodeId")(device(6), &value), NVML_SUCCESS);
  EXPECT_EQ(value, 1u);

  nvmlMemory_t mem{};
  ASSERT_EQ(sym<nvmlDeviceGetMemoryInfo_fn>("nvmlDeviceGetMemoryInfo")(d3, &mem), NVML_SUCCESS);
  EXPECT_EQ(mem.total, 40960ULL * 1024 * 1024);
  EXPECT_EQ(mem.free + mem.used, mem.total);
  int major = 0, minor = 0;
  ASSERT_EQ(sym<nvmlDeviceGetCudaComputeCapability_fn>("nvmlDeviceGetCudaComputeCapability")(d3, &major, &minor),
            NVML_SUCCESS);
  EXPECT_EQ(major * 10 + minor, 80);
  nvmlDeviceArchitecture_t arch = 0;
  ASSERT_EQ(sym<nvmlDeviceGetArchitecture_fn>("nvmlDeviceGetArchitecture")(d3, &arch), NVML_SUCCESS);
  EXPECT_EQ(arch, static_cast<nvmlDeviceArchitecture_t>(NVML_DEVICE_ARCH_AMPERE));
  nvmlBrandType_t brand = NVML_BRAND_UNKNOWN;
  ASSERT_EQ(sym<nvmlDeviceGetBrand_fn>("nvmlDeviceGetBrand")(d3, &brand), NVML_SUCCESS);
  EXPECT_EQ(brand, NVML_BRAND_NVIDIA);
  ASSERT_EQ(sym<nvmlDeviceGetPowerUsage_fn>("nvmlDeviceGetPowerUsage")(d3, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 62001u);
  ASSERT_EQ(sym<nvmlDeviceGetTemperature_fn>("nvmlDeviceGetTemperature")(d3, NVML_TEMPERATURE_GPU, &value), NVML_SUCCESS);
  EXPECT_EQ(value, 32u);
  // As the real NVML: no attributes for a whole GPU; its SM count comes from its cores (A100: 64 a SM).
  nvmlDeviceAttributes_t attrs{};
  EXPECT_EQ(sym<nvmlDeviceGetAttributes_fn>("nvmlDeviceGetAttributes_v2")(d3, &attrs), NVML_ERROR_NOT_SUPPORTED);
  unsigned cores = 0;
  ASSERT_EQ(sym<nvmlDeviceGetNumGpuCores_fn>("nvmlDeviceGetNumGpuCores")(d3, &cores), NVML_SUCCESS);
  EXPECT_EQ(cores, 108u * 64u);
}

TEST_F(FakeNvmlDevices, PciInfoInEveryVersionAndLookupByBusId) {
  ASSERT_EQ(init_with(fleet_path("dgx-a100")), NVML_SUCCESS);
  nvmlDevice_t d6 = device(6);
  nvmlPciInfo_t pci{};
  ASSERT_EQ(sym<nvmlDeviceGetPciInfo_fn>("nvmlDeviceGetPciInfo_v3")(d6, &pci), NVML_SUCCESS);
  EXPECT_STREQ(pci.busId, "00000000:B7:00.0");
  EXPECT_STREQ(pci.busIdLegacy, "0000:B7:00.0");
  EXPECT_EQ(pci.domain, 0u);
  EXPECT_EQ(pci.bus, 0xB7u);
  EXPECT_EQ(pci.device, 0u);
  EXPECT_EQ(pci.pciDeviceId, 0x20B010DEu);
  EXPECT_EQ(pci.pciSubSystemId, 0x134F10DEu);
  nvmlPciInfo_t v2{};
  ASSERT_EQ(sym<nvmlDeviceGetPciInfo_fn>("nvmlDeviceGetPciInfo_v2")(d6, &v2), NVML_SUCCESS);
  EXPECT_EQ(std::memcmp(&v2, &pci, sizeof pci), 0);

  // The unversioned call fills the original 52-byte record (16-byte busId first) and nothing past it.
  unsigned char v1[64];
  std::memset(v1, 0xAB, sizeof v1);
  ASSERT_EQ(sym<nvmlReturn_t (*)(nvmlDevice_t, void*)>("nvmlDeviceGetPciInfo")(d6, v1), NVML_SUCCESS);
  EXPECT_STREQ(reinterpret_cast<const char*>(v1), "0000:B7:00.0");
  unsigned device_id = 0;
  std::memcpy(&device_id, v1 + 16 + 3 * sizeof(unsigned), sizeof device_id);
  EXPECT_EQ(device_id, 0x20B010DEu);
  EXPECT_EQ(v1[52], 0xAB);

  auto by_bus = sym<nvmlDeviceGetHandleByPciBusId_fn>("nvmlDeviceGetHandleByPciBusId_v2");
  nvmlDevice_t found = nullptr;
  for (const char* form : {"00000000:B7:00.0", "0000:b7:00.0", "b7:00.0"}) {
    found = nullptr;
    EXPECT_EQ(by_bus(form, &found), NVML_SUCCESS) << form;
    EXPECT_EQ(found, d6) << form;
  }
  EXPECT_EQ(by_bus("0000:b8:00.0", &found), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(by_bus("not-a-bus", &found), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(sym<nvmlDeviceGetHandleByPciBusId_fn>("nvmlDeviceGetHandleByPciBusId")("0000:B7:00.0", &found), NVML_SUCCESS);
  EXPECT_EQ(found, d6);
}

TEST_F(FakeNvmlDevices, HandlesByIndexAndUuidAgree) {
  ASSERT_EQ(init_with(fleet_path("hgx-16")), NVML_SUCCESS);
  auto by_uuid = sym<nvmlDeviceGetHandleByUUID_fn>("nvmlDeviceGetHandleByUUID");
  std::set<std::string> uuids;
  for (unsigned i = 0; i < 16; ++i) {
    nvmlDevice_t d = device(i);
    nvmlDevice_t again = nullptr;
    ASSERT_EQ(by_uuid(uuid(d).c_str(), &again), NVML_SUCCESS);
    EXPECT_EQ(again, d);
    uuids.insert(uuid(d));
    nvmlDevice_t v1 = nullptr;
    ASSERT_EQ(sym<nvmlDeviceGetHandleByIndex_fn>("nvmlDeviceGetHandleByIndex")(i, &v1), NVML_SUCCESS);
    EXPECT_EQ(v1, d);
  }
  EXPECT_EQ(uuids.size(), 16u);
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(by_uuid("GPU-00000000-0000-0000-0000-000000000000", &d), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(sym<nvmlDeviceGetHandleByIndex_fn>("nvmlDeviceGetHandleByIndex_v2")(16, &d), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(FakeNvmlDevices, TopologyLevelsFollowPcieGroupsAndNuma) {
  ASSERT_EQ(init_with(fleet_path("dgx-a100")), NVML_SUCCESS);
  auto level = [&](unsigned a, unsigned b) {
    nvmlGpuTopologyLevel_t l = NVML_TOPOLOGY_INTERNAL;
    EXPECT_EQ(sym<nvmlDeviceGetTopologyCommonAncestor_fn>("nvmlDeviceGetTopologyCommonAncestor")(device(a), device(b), &l),
              NVML_SUCCESS);
    return l;
  };
  EXPECT_EQ(level(0, 1), NVML_TOPOLOGY_MULTIPLE);  // listed pair behind one PCIe switch
  EXPECT_EQ(level(1, 0), NVML_TOPOLOGY_MULTIPLE);
  EXPECT_EQ(level(0, 2), NVML_TOPOLOGY_NODE);      // same NUMA node
  EXPECT_EQ(level(0, 4), NVML_TOPOLOGY_SYSTEM);    // across sockets
  EXPECT_EQ(level(5, 5), NVML_TOPOLOGY_INTERNAL);
}

TEST_F(FakeNvmlDevices, NvSwitchLinksReportTheSwitchAsRemote) {
  ASSERT_EQ(init_with(fleet_path("dgx-a100")), NVML_SUCCESS);
  auto state = sym<nvmlDeviceGetNvLinkState_fn>("nvmlDeviceGetNvLinkState");
  auto remote = sym<nvmlDeviceGetNvLinkRemotePciInfo_fn>("nvmlDeviceGetNvLinkRemotePciInfo_v2");
  auto type = sym<nvmlDeviceGetNvLinkRemoteDeviceType_fn>("nvmlDeviceGetNvLinkRemoteDeviceType");
  std::set<std::string> gpu_buses;
  for (unsigned i = 0; i < 8; ++i) {
    nvmlPciInfo_t pci{};
    ASSERT_EQ(sym<nvmlDeviceGetPciInfo_fn>("nvmlDeviceGetPciInfo_v3")(device(i), &pci), NVML_SUCCESS);
    gpu_buses.insert(pci.busId);
  }
  nvmlDevice_t d = device(2);
  std::set<std::string> switches;
  for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
    nvmlEnableState_t active = NVML_FEATURE_DISABLED;
    nvmlReturn_t rc = state(d, link, &active);
    if (link >= 12) {
      EXPECT_EQ(rc, NVML_ERROR_NOT_SUPPORTED) << link;  // an A100 has 12 NVLink ports
      continue;
    }
    ASSERT_EQ(rc, NVML_SUCCESS);
    EXPECT_EQ(active, NVML_FEATURE_ENABLED);
    nvmlPciInfo_t pci{};
    ASSERT_EQ(remote(d, link, &pci), NVML_SUCCESS);
    EXPECT_EQ(gpu_buses.count(pci.busId), 0u) << "link " << link << " must end at a switch, not a GPU";
    EXPECT_EQ(pci.pciDeviceId, 0x1AF110DEu);
    switches.insert(pci.busId);
    nvmlIntNvLinkDeviceType_t t = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
    ASSERT_EQ(type(d, link, &t), NVML_SUCCESS);
    EXPECT_EQ(t, NVML_NVLINK_DEVICE_TYPE_SWITCH);
  }
  EXPECT_EQ(switches.size(), 6u);  // links spread over the six NVSwitches
  nvmlEnableState_t active = NVML_FEATURE_DISABLED;
  EXPECT_EQ(state(d, NVML_NVLINK_MAX_LINKS, &active), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(FakeNvmlDevices, BridgedPairsLinkOnlyToTheirPartner) {
  ASSERT_EQ(init_with(fleet_path("pcie-l4x4-pairs")), NVML_SUCCESS);
  auto state = sym<nvmlDeviceGetNvLinkState_fn>("nvmlDeviceGetNvLinkState");
  auto remote = sym<nvmlDeviceGetNvLinkRemotePciInfo_fn>("nvmlDeviceGetNvLinkRemotePciInfo_v2");
  const std::pair<unsigned, unsigned> partners[] = {{0, 1}, {1, 0}, {2, 3}, {3, 2}};
  for (const auto& [gpu, partner] : partners) {
    nvmlPciInfo_t partner_pci{};
    ASSERT_EQ(sym<nvmlDeviceGetPciInfo_fn>("nvmlDeviceGetPciInfo_v3")(device(partner), &partner_pci), NVML_SUCCESS);
    unsigned active_links = 0;
    for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
      nvmlEnableState_t active = NVML_FEATURE_DISABLED;
      if (state(device(gpu), link, &active) != NVML_SUCCESS || active != NVML_FEATURE_ENABLED) continue;
      ++active_links;
      nvmlPciInfo_t pci{};
      ASSERT_EQ(remote(device(gpu), link, &pci), NVML_SUCCESS);
      EXPECT_STREQ(pci.busId, partner_pci.busId);
      EXPECT_EQ(pci.pciDeviceId, partner_pci.pciDeviceId);
    }
    EXPECT_EQ(active_links, 4u) << "GPU " << gpu;
  }
  nvmlIntNvLinkDeviceType_t t = NVML_NVLINK_DEVICE_TYPE_UNKNOWN;
  ASSERT_EQ(sym<nvmlDeviceGetNvLinkRemoteDeviceType_fn>("nvmlDeviceGetNvLinkRemoteDeviceType")(device(0), 0, &t), NVML_SUCCESS);
  EXPECT_EQ(t, NVML_NVLINK_DEVICE_TYPE_GPU);
}

TEST_F(FakeNvmlDevices, PcieT4sHaveNoNvLinkNoMigAndSitOnTwoSockets) {
  ASSERT_EQ(init_with(fleet_path("pcie-t4x2")), NVML_SUCCESS);
  nvmlEnableState_t active = NVML_FEATURE_DISABLED;
  EXPECT_EQ(sym<nvmlDeviceGetNvLinkState_fn>("nvmlDeviceGetNvLinkState")(device(0), 0, &active), NVML_ERROR_NOT_SUPPORTED);
  unsigned cur = 0, pending = 0;
  EXPECT_EQ(sym<nvmlDeviceGetMigMode_fn>("nvmlDeviceGetMigMode")(device(0), &cur, &pending), NVML_ERROR_NOT_SUPPORTED);
  nvmlGpuTopologyLevel_t level = NVML_TOPOLOGY_INTERNAL;
  ASSERT_EQ(sym<nvmlDeviceGetTopologyCommonAncestor_fn>("nvmlDeviceGetTopologyCommonAncestor")(device(0), device(1), &level),
            NVML_SUCCESS);
  EXPECT_EQ(level, NVML_TOPOLOGY_SYSTEM);
  EXPECT_EQ(name(device(1)), "Tesla T4");
  int major = 0, minor = 0;
  ASSERT_EQ(sym<nvmlDeviceGetCudaComputeCapability_fn>("nvmlDeviceGetCudaComputeCapability")(device(1), &major, &minor),
            NVML_SUCCESS);
  EXPECT_EQ(major * 10 + minor, 75);
  nvmlGpuFabricInfo_t fabric{};
  EXPECT_EQ(sym<nvmlDeviceGetGpuFabricInfo_fn>("nvmlDeviceGetGpuFabricInfo")(device(0), &fabric), NVML_ERROR_NOT_SUPPORTED);
}

TEST_F(FakeNvmlDevices, H100FabricInfoInBothVersions) {
  ASSERT_EQ(init_with(fleet_path("hgx-h100")), NVML_SUCCESS);
  EXPECT_EQ(name(device(0)), "NVIDIA H100 80GB HBM3");
  nvmlGpuFabricInfo_t v1{};
  ASSERT_EQ(sym<nvmlDeviceGetGpuFabricInfo_fn>("nvmlDeviceGetGpuFabricInfo")(device(0), &v1), NVML_SUCCESS);
  EXPECT_EQ(v1.state, NVML_GPU_FABRIC_STATE_COMPLETED);
  EXPECT_EQ(v1.cliqueId, 1u);
  EXPECT_EQ(v1.status, NVML_SUCCESS);
  EXPECT_EQ(v1.clusterUuid[0], 0x5f);  // "5f2a9c4e-..." in the fleet
  EXPECT_EQ(v1.clusterUuid[15], 0x4d);
  auto fabric_v = sym<nvmlDeviceGetGpuFabricInfoV_fn>("nvmlDeviceGetGpuFabricInfoV");
  nvmlGpuFabricInfoV_t v2{};
  v2.version = static_cast<unsigned>(sizeof(nvmlGpuFabricInfoV_t)) | (2u << 24);  // nvmlGpuFabricInfo_v2
  ASSERT_EQ(fabric_v(device(7), &v2), NVML_SUCCESS);
  EXPECT_EQ(v2.cliqueId, 1u);
  EXPECT_EQ(std::memcmp(v2.clusterUuid, v1.clusterUuid, sizeof v1.clusterUuid), 0);
  v2.version = 7;
  EXPECT_EQ(fabric_v(device(7), &v2), NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
}

TEST_F(FakeNvmlDevices, FleetFailuresAndLostGpus) {
  auto fleet = dir_.file("failing.yaml", R"(node: {driver_version: "550.54.15", cuda_driver_version: 12040}
defaults:
  name: Tesla T4
  architecture: turing
  compute_capability: "7.5"
  memory: {total_mib: 15360}
  pci: {device_id: 0x1EB8}
gpus:
  - {uuid: GPU-00000000-0000-4000-8000-000000000000, pci: {bus_id: "0000:01:00.0"}}
  - {uuid: GPU-00000000-0000-4000-8000-000000000001, pci: {bus_id: "0000:02:00.0"}, fail: {handle: NVML_ERROR_UNKNOWN}}
  - {uuid: GPU-00000000-0000-4000-8000-000000000002, pci: {bus_id: "0000:03:00.0"}, lost: true}
  - uuid: GPU-00000000-0000-4000-8000-000000000003
    pci: {bus_id: "0000:04:00.0"}
    fail:
      calls: {nvmlDeviceGetMemoryInfo: NVML_ERROR_NOT_SUPPORTED, nvmlDeviceGetPciInfo_v3: 999}
)");
  ASSERT_EQ(init_with(fleet), NVML_SUCCESS);
  unsigned n = 0;
  ASSERT_EQ(sym<nvmlDeviceGetCount_fn>("nvmlDeviceGetCount_v2")(&n), NVML_SUCCESS);
  EXPECT_EQ(n, 4u);
  auto by_index = sym<nvmlDeviceGetHandleByIndex_fn>("nvmlDeviceGetHandleByIndex_v2");
  auto by_uuid = sym<nvmlDeviceGetHandleByUUID_fn>("nvmlDeviceGetHandleByUUID");
  nvmlDevice_t d = nullptr;
  EXPECT_EQ(by_index(1, &d), NVML_ERROR_UNKNOWN);
  EXPECT_EQ(by_uuid("GPU-00000000-0000-4000-8000-000000000001", &d), NVML_ERROR_UNKNOWN);
  EXPECT_EQ(by_index(2, &d), NVML_ERROR_GPU_IS_LOST);
  nvmlDevice_t d3 = device(3);
  nvmlMemory_t mem{};
  EXPECT_EQ(sym<nvmlDeviceGetMemoryInfo_fn>("nvmlDeviceGetMemoryInfo")(d3, &mem), NVML_ERROR_NOT_SUPPORTED);
  nvmlPciInfo_t pci{};
  EXPECT_EQ(sym<nvmlDeviceGetPciInfo_fn>("nvmlDeviceGetPciInfo_v3")(d3, &pci), NVML_ERROR_UNKNOWN);
  // A failure named with its version applies to that version only.
  EXPECT_EQ(sym<nvmlDeviceGetPciInfo_fn>("nvmlDeviceGetPciInfo_v2")(d3, &pci), NVML_SUCCESS);
  EXPECT_EQ(name(d3), "Tesla T4");
  EXPECT_EQ(name(device(0)), "Tesla T4");
}

TEST_F(FakeNvmlDevices, NullArgumentsAndBogusHandlesAreRejected) {
  ASSERT_EQ(init_with(fleet_path("pcie-t4x2")), NVML_SUCCESS);
  EXPECT_EQ(sym<nvmlDeviceGetCount_fn>("nvmlDeviceGetCount_v2")(nullptr), NVML_ERROR_INVALID_ARGUMENT);
  nvmlMemory_t mem{};
  EXPECT_EQ(sym<nvmlDeviceGetMemoryInfo_fn>("nvmlDeviceGetMemoryInfo")(device(0), nullptr), NVML_ERROR_INVALID_ARGUMENT);
  int not_a_device = 0;
  EXPECT_EQ(sym<nvmlDeviceGetMemoryInfo_fn>("nvmlDeviceGetMemoryInfo")(reinterpret_cast<nvmlDevice_t>(&not_a_device), &mem),
            NVML_ERROR_INVALID_ARGUMENT);
  char small[4];
  EXPECT_EQ(sym<nvmlDeviceGetName_fn>("nvmlDeviceGetName")(device(0), small, sizeof small), NVML_ERROR_INSUFFICIENT_SIZE);
}

}  // namespace
}  // namespace kgpu::fake_nvml::testing
