#include "nvml/discovery.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>

#include "nvml/procfs_gpus.h"
#include "unit/nvml/fake_fleet.h"

namespace kgpu {
namespace {

using ::testing::HasSubstr;
using testing::FakeNode;
using testing::fleet_path;

constexpr uint64_t kMiB = 1024ULL * 1024;

Inventory discover(FakeNode& node) {
  EXPECT_TRUE(node.ready()) << node.problem();
  if (!node.ready()) return {};
  auto inv = discover_nvidia(node.nvml(), node.options());
  EXPECT_TRUE(inv.ok()) << inv.error().message;
  EXPECT_EQ(node.nvml().init_count(), 0) << "discovery must release its NVML session";
  return inv.ok() ? *inv : Inventory{};
}

TEST(DiscoverNvidia, DgxA100FillsEveryGpuField) {
  FakeNode node(fleet_path("dgx-a100.yaml"));
  Inventory inv = discover(node);
  ASSERT_EQ(inv.gpus.size(), 8u);
  EXPECT_TRUE(inv.warnings.empty()) << inv.warnings.front();
  EXPECT_EQ(inv.driver_version, "550.54.15");
  EXPECT_EQ(inv.cuda_driver_version, 12040);
  const Gpu& g = inv.gpus[7];
  EXPECT_EQ(g.vendor, Vendor::Nvidia);
  EXPECT_EQ(g.index, 7);
  EXPECT_EQ(g.uuid, "GPU-e5f6a7b8-c9d0-4e1f-8a2b-7c8d9e0f1a87");
  EXPECT_EQ(g.product, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(g.memory_bytes, 40960 * kMiB);
  EXPECT_EQ(sysfs_pci_address(g.pci_bus_id), "0000:bd:00.0");
  EXPECT_EQ(g.pci_device_id, 0x20B010DEu);
  EXPECT_EQ(g.minor, 7);
  EXPECT_EQ(g.numa_node, 1);  // from the fixture sysfs tree
  EXPECT_EQ(g.cc_major, 8);
  EXPECT_EQ(g.cc_minor, 0);
  EXPECT_EQ(g.architecture, "ampere");
  EXPECT_EQ(g.brand, "nvidia");
  EXPECT_EQ(g.serial, "1562320010087");
  EXPECT_TRUE(g.mig_capable);
  EXPECT_FALSE(g.mig_enabled);
  EXPECT_TRUE(g.mig_devices.empty());
  ASSERT_EQ(g.device_nodes.size(), 1u);
  EXPECT_EQ(g.device_nodes[0].path, "/dev/nvidia7");
  EXPECT_TRUE(g.health.healthy);
  EXPECT_EQ(inv.gpus[0].numa_node, 0);
}

TEST(DiscoverNvidia, DgxA100TopologyIsNvSwitchWithPciePairs) {
  FakeNode node(fleet_path("dgx-a100.yaml"));
  Inventory inv = discover(node);
  ASSERT_EQ(inv.topology.links.size(), 8u);
  EXPECT_TRUE(inv.topology.nvswitch);
  EXPECT_EQ(inv.topology.link(0, 1).nvlinks, 12);
  EXPECT_EQ(inv.topology.link(0, 7).nvlinks, 12);
  EXPECT_EQ(inv.topology.link(0, 1).pcie, PcieLevel::MultipleSwitches);
  EXPECT_EQ(inv.topology.link(0, 2).pcie, PcieLevel::SameNuma);
  EXPECT_EQ(inv.topology.link(0, 4).pcie, PcieLevel::CrossSocket);
  EXPECT_EQ(inv.topology.link(4, 0), inv.topology.link(0, 4));
}

TEST(DiscoverNvidia, HgxH100HasHopperAndFabric) {
  FakeNode node(fleet_path("hgx-h100.yaml"));
  Inventory inv = discover(node);
  ASSERT_EQ(inv.gpus.size(), 8u);
  EXPECT_EQ(inv.gpus[0].architecture, "hopper");
  EXPECT_EQ(inv.gpus[0].fabric_cluster_uuid, "5f2a9c4e-1b7d-4e3a-9c0f-6d8e2a1b3c4d");
  EXPECT_EQ(inv.gpus[0].fabric_clique, 1u);
  EXPECT_TRUE(inv.topology.nvswitch);
  EXPECT_EQ(inv.topology.link(2, 5).nvlinks, 18);
}

TEST(DiscoverNvidia, HgxSixteenGpus) {
  FakeNode node(fleet_path("hgx-16.yaml"));
  Inventory inv = discover(node);
  ASSERT_EQ(inv.gpus.size(), 16u);
  EXPECT_TRUE(inv.topology.nvswitch);
  EXPECT_EQ(inv.topology.link(0, 15).nvlinks, 12);
  EXPECT_EQ(inv.topology.link(8, 9).pcie, PcieLevel::MultipleSwitches);
}

TEST(DiscoverNvidia, PcieT4PairHasNoNvlinkAndTwoNumaNodes) {
  FakeNode node(fleet_path("pcie-t4x2.yaml"));
  Inventory inv = discover(node);
  ASSERT_EQ(inv.gpus.size(), 2u);
  EXPECT_EQ(inv.driver_version, "535.161.08");
  EXPECT_EQ(inv.gpus[0].architecture, "turing");
  EXPECT_EQ(inv.gpus[0].numa_node, 0);
  EXPECT_EQ(inv.gpus[1].numa_node, 1);
  EXPECT_FALSE(inv.gpus[0].mig_capable);
  EXPECT_FALSE(inv.topology.nvswitch);
  EXPECT_EQ(inv.topology.link(0, 1).nvlinks, 0);
  EXPECT_EQ(inv.topology.link(0, 1).pcie, PcieLevel::CrossSocket);
}

TEST(DiscoverNvidia, NvlinkBridgesCountLanesPerPairOnly) {
  FakeNode node(fleet_path("pcie-l4x4-pairs.yaml"));
  Inventory inv = discover(node);
  ASSERT_EQ(inv.gpus.size(), 4u);
  EXPECT_FALSE(inv.topology.nvswitch);
  EXPECT_EQ(inv.topology.link(0, 1).nvlinks, 4);
  EXPECT_EQ(inv.topology.link(2, 3).nvlinks, 4);
  EXPECT_EQ(inv.topology.link(0, 2).nvlinks, 0);
  EXPECT_EQ(inv.topology.link(1, 3).nvlinks, 0);
}

TEST(DiscoverNvidia, MixedMigProfilesAndCapabilityNodes) {
  FakeNode node(fleet_path("a100-mig-mixed.yaml"));
  Inventory inv = discover(node);
  ASSERT_EQ(inv.gpus.size(), 4u);
  EXPECT_TRUE(inv.warnings.empty()) << inv.warnings.front();
  const Gpu& g0 = inv.gpus[0];
  EXPECT_TRUE(g0.mig_enabled);
  ASSERT_EQ(g0.mig_devices.size(), 3u);
  EXPECT_EQ(g0.mig_devices[0].profile, "3g.20gb");
  EXPECT_EQ(g0.mig_devices[0].uuid, "MIG-e9a5642c-7d07-43e5-b6e5-c77a2ee05f69");
  EXPECT_EQ(g0.mig_devices[0].gpu_instance_slices, 3);
  EXPECT_EQ(g0.mig_devices[1].profile, "2g.10gb");
  EXPECT_EQ(g0.mig_devices[2].profile, "1g.5gb");
  EXPECT_EQ(g0.mig_devices[2].index, 2);
  // Where each GPU instance sits, as nvmlGpuInstanceGetInfo reports it (DRA device names and
  // memorySlice capacities follow it).
  EXPECT_EQ(g0.mig_devices[0].gi_profile_id, 9);
  EXPECT_EQ(g0.mig_devices[0].placement_start, 0);
  EXPECT_EQ(g0.mig_devices[0].placement_size, 4);
  EXPECT_EQ(g0.mig_devices[1].gi_profile_id, 14);
  EXPECT_EQ(g0.mig_devices[1].placement_start, 4);
  EXPECT_EQ(g0.mig_devices[1].placement_size, 2);
  EXPECT_EQ(g0.mig_devices[2].placement_start, 6);
  EXPECT_EQ(g0.mig_devices[2].placement_size, 1);
  for (const auto& m : g0.mig_devices) {
    // minor(gi) = 3 + 135*m + 9*g, minor(ci) = minor(gi) + 1 + c on GPU minor 0.
    ASSERT_EQ(m.capability_nodes.size(), 2u) << m.uuid;
    EXPECT_EQ(m.capability_nodes[0].path,
              "/dev/nvidia-caps/nvidia-cap" + std::to_string(3 + 9 * m.gpu_instance_id));
    EXPECT_EQ(m.capability_nodes[1].path,
              "/dev/nvidia-caps/nvidia-cap" + std::to_string(4 + 9 * m.gpu_instance_id + m.compute_instance_id));
    EXPECT_GT(m.memory_bytes, 0u);
    EXPECT_GT(m.multiprocessors, 0);
  }
  EXPECT_EQ(inv.gpus[1].mig_devices.size(), 7u);
  for (const auto& m : inv.gpus[1].mig_devices) EXPECT_EQ(m.profile, "1g.5gb");
  EXPECT_FALSE(inv.gpus[3].mig_enabled);
  EXPECT_TRUE(inv.gpus[3].mig_devices.empty());
  EXPECT_EQ(inv.topology.link(0, 3).nvlinks, 4);
}

// A GPU instance reports its profile's ID (A100: 2g.10gb is 14, 1g.5gb+me 20), not the profile
// index the suffixes follow: 14 read as an index is NO_ME ("-me"), and 20 is no index at all, so
// "+me" was lost (issue 41). The IDs are mapped to indexes as go-nvlib does.
TEST(DiscoverNvidia, MigProfileSuffixesFollowTheProfileIndexNotItsId) {
  std::string fleet;
  {
    std::ifstream in(fleet_path("a100-mig-mixed.yaml"));
    fleet.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string base = "{profile: 1g.5gb, placement: 6, uuid: MIG-f054e0b8-3ce3-494d-b394-7d9c777a5bbb}";
  const auto at = fleet.find(base);
  ASSERT_NE(at, std::string::npos);
  fleet.replace(at, base.size(), "{profile: 1g.5gb+me, placement: 6, uuid: MIG-f054e0b8-3ce3-494d-b394-7d9c777a5bbb}");
  testing::TempDir dir;
  testing::write_file(dir.path() + "/fleet.yaml", fleet);
  FakeNode node(dir.path() + "/fleet.yaml");
  Inventory inv = discover(node);
  ASSERT_EQ(inv.gpus.size(), 4u);
  ASSERT_EQ(inv.gpus[0].mig_devices.size(), 3u);
  EXPECT_EQ(inv.gpus[0].mig_devices[0].profile, "3g.20gb");
  EXPECT_EQ(inv.gpus[0].mig_devices[1].profile, "2g.10gb");
  EXPECT_EQ(inv.gpus[0].mig_devices[1].gi_profile_id, 14);
  EXPECT_EQ(inv.gpus[0].mig_devices[2].profile, "1g.5gb+me");
  EXPECT_EQ(inv.gpus[0].mig_devices[2].gi_profile_id, 20);
}

TEST(DiscoverNvidia, SingleMigLayout) {
  FakeNode node(fleet_path("a100-mig-single.yaml"));
  Inventory inv = discover(node);
  ASSERT_EQ(inv.gpus.size(), 2u);
  for (const auto& g : inv.gpus) {
    ASSERT_EQ(g.mig_devices.size(), 7u);
    for (const auto& m : g.mig_devices) EXPECT_EQ(m.profile, "1g.5gb");
  }
}

// Regression (issue 20 item 10): without mig-minors the MIG devices were advertised Healthy with
// no /dev/nvidia-caps nodes, so containers got a device they could not open.
TEST(DiscoverNvidia, MissingMigMinorsMarksMigDevicesUnhealthy) {
  FakeNode node(fleet_path("a100-mig-single.yaml"));
  ASSERT_TRUE(node.ready()) << node.problem();
  auto options = node.options();
  options.proc_root = node.root() + "/no-proc";
  auto inv = discover_nvidia(node.nvml(), options);
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  ASSERT_EQ(inv->gpus[0].mig_devices.size(), 7u);
  for (const auto& g : inv->gpus)
    for (const auto& m : g.mig_devices) {
      EXPECT_TRUE(m.capability_nodes.empty());
      EXPECT_FALSE(m.health.healthy) << m.uuid;
      EXPECT_THAT(m.health.reason, HasSubstr("mig-minors"));
    }
  EXPECT_TRUE(inv->gpus[0].health.healthy);  // the GPU itself is fine
  ASSERT_EQ(inv->warnings.size(), 1u);
  EXPECT_THAT(inv->warnings[0], HasSubstr("mig-minors"));
  EXPECT_THAT(inv->warnings[0], HasSubstr("unhealthy"));
}

TEST(DiscoverNvidia, RepeatedMigMinorsLineMarksMigDevicesUnhealthy) {
  FakeNode node(fleet_path("a100-mig-single.yaml"));
  ASSERT_TRUE(node.ready()) << node.problem();
  std::string path = node.root() + "/proc/driver/nvidia-caps/mig-minors";
  std::ifstream in(path);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_NE(text.find("gpu0/gi"), std::string::npos) << text;
  std::string line = text.substr(text.find("gpu0/gi"));
  line = line.substr(0, line.find(' '));
  testing::write_file(path, text + line + " 1\n");  // the config capability's minor, under a GI's name
  auto inv = discover_nvidia(node.nvml(), node.options());
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  for (const auto& m : inv->gpus[0].mig_devices) {
    EXPECT_FALSE(m.health.healthy) << m.uuid;
    EXPECT_THAT(m.health.reason, HasSubstr("appears twice"));
    for (const auto& n : m.capability_nodes) EXPECT_NE(n.path, "/dev/nvidia-caps/nvidia-cap1");
  }
}

TEST(DiscoverNvidia, MigDeviceMissingFromMigMinorsIsUnhealthyAlone) {
  FakeNode node(fleet_path("a100-mig-single.yaml"));
  ASSERT_TRUE(node.ready()) << node.problem();
  std::string path = node.root() + "/proc/driver/nvidia-caps/mig-minors";
  std::ifstream in(path);
  std::string text, kept;
  for (std::string l; std::getline(in, l);)
    if (l.rfind("gpu1/", 0) != 0) kept += l + "\n";  // GPU minor 1's lines are gone
  testing::write_file(path, kept);
  auto inv = discover_nvidia(node.nvml(), node.options());
  ASSERT_TRUE(inv.ok()) << inv.error().message;
  ASSERT_EQ(inv->gpus.size(), 2u);
  for (const auto& m : inv->gpus[0].mig_devices) EXPECT_TRUE(m.health.healthy) << m.uuid;
  for (const auto& m : inv->gpus[1].mig_devices) {
    EXPECT_FALSE(m.health.healthy) << m.uuid;
    EXPECT_THAT(m.health.reason, HasSubstr("gpu1/gi"));
  }
}

TEST(DiscoverNvidia, NoGpus) {
  FakeNode node(fleet_path("empty.yaml"));
  Inventory inv = discover(node);
  EXPECT_TRUE(inv.gpus.empty());
  EXPECT_TRUE(inv.topology.empty());
  EXPECT_EQ(inv.driver_version, "550.54.15");
}

TEST(DiscoverNvidia, NumaAbsentWhenSysfsLacksIt) {
  FakeNode node(fleet_path("pcie-t4x2.yaml"));
  ASSERT_TRUE(node.ready()) << node.problem();
  auto options = node.options();
  options.sysfs_root = node.root() + "/nowhere";
  auto inv = discover_nvidia(node.nvml(), options);
  ASSERT_TRUE(inv.ok());
  EXPECT_FALSE(inv->gpus[0].numa_node.has_value());
}

TEST(DiscoverNvidia, NegativeNumaNodeIsAbsent) {
  FakeNode node(fleet_path("pcie-t4x2.yaml"));
  ASSERT_TRUE(node.ready()) << node.problem();
  testing::write_file(node.root() + "/sys/bus/pci/devices/0000:3b:00.0/numa_node", "-1\n");
  auto inv = discover_nvidia(node.nvml(), node.options());
  ASSERT_TRUE(inv.ok());
  EXPECT_FALSE(inv->gpus[0].numa_node.has_value());
  EXPECT_EQ(inv->gpus[1].numa_node, 1);
}

// Three GPUs: index 1's handle fails (left out), index 2 is lost behind a working handle (kept,
// unhealthy), index 0 lacks memory info (fine, no warning: NOT_SUPPORTED).
constexpr const char* kFailingFleet = R"(node: {driver_version: "550.54.15", cuda_driver_version: 12040}
defaults:
  name: Tesla T4
  architecture: turing
  compute_capability: "7.5"
  memory: {total_mib: 15360}
  pci: {device_id: 0x1EB8}
gpus:
  - {index: 0, uuid: GPU-00000000-0000-4000-8000-000000000000, pci: {bus_id: "0000:3B:00.0"},
     fail: {calls: {nvmlDeviceGetMemoryInfo: NVML_ERROR_NOT_SUPPORTED}}}
  - {index: 1, uuid: GPU-11111111-1111-4111-8111-111111111111, pci: {bus_id: "0000:5E:00.0"},
     fail: {handle: NVML_ERROR_UNKNOWN}}
  - {index: 2, uuid: GPU-22222222-2222-4222-8222-222222222222, pci: {bus_id: "0000:AF:00.0"},
     fail: {calls: {nvmlDeviceGetPciInfo: NVML_ERROR_GPU_IS_LOST}}}
)";

TEST(DiscoverNvidia, OneFailingGpuNeverFailsTheOthers) {
  testing::TempDir dir;
  testing::write_file(dir.path() + "/fleet.yaml", kFailingFleet);
  FakeNode node(dir.path() + "/fleet.yaml");
  Inventory inv = discover(node);
  ASSERT_EQ(inv.gpus.size(), 2u);
  EXPECT_EQ(inv.gpus[0].index, 0);
  EXPECT_TRUE(inv.gpus[0].health.healthy);
  EXPECT_EQ(inv.gpus[0].memory_bytes, 0u);
  EXPECT_EQ(inv.gpus[1].index, 2);
  EXPECT_EQ(inv.gpus[1].uuid, "GPU-22222222-2222-4222-8222-222222222222");
  EXPECT_FALSE(inv.gpus[1].health.healthy);
  EXPECT_THAT(inv.gpus[1].health.reason, HasSubstr("GPU is lost"));
  ASSERT_EQ(inv.warnings.size(), 2u);
  EXPECT_THAT(inv.warnings[0], HasSubstr("GPU 1"));
  EXPECT_THAT(inv.warnings[0], HasSubstr("left out"));
  EXPECT_THAT(inv.warnings[1], HasSubstr("GPU-22222222-2222-4222-8222-222222222222"));
  ASSERT_EQ(inv.topology.links.size(), 2u);
  EXPECT_EQ(inv.topology.link(0, 1).pcie, PcieLevel::Unknown);  // not asked of a lost GPU
}

// Issue 37, item 4: a GPU lost before kgpu started (NVML counts it but answers GPU_IS_LOST for its
// UUID) is named from the driver's procfs entry and kept unhealthy, so the DRA slice shows it with a
// gpu-lost taint and the device plugin as unhealthy, instead of a node with one GPU less.
TEST(DiscoverNvidia, AGpuLostAtStartIsNamedFromTheDriversProcfsEntry) {
  testing::TempDir dir;
  testing::write_file(dir.path() + "/fleet.yaml", R"(node: {driver_version: "550.54.15", cuda_driver_version: 12040}
defaults: {name: Tesla T4, architecture: turing, compute_capability: "7.5", memory: {total_mib: 15360}, pci: {device_id: 0x1EB8}}
gpus:
  - {index: 0, uuid: GPU-00000000-0000-4000-8000-000000000000, minor: 0, pci: {bus_id: "0000:3B:00.0"}}
  - {index: 1, uuid: GPU-11111111-1111-4111-8111-111111111111, minor: 1, numa_node: 0, pci: {bus_id: "0000:5E:00.0"}, lost: true}
)");
  FakeNode node(dir.path() + "/fleet.yaml");
  Inventory inv = discover(node);
  ASSERT_EQ(inv.gpus.size(), 2u);
  const Gpu& lost = inv.gpus[1];
  EXPECT_EQ(lost.index, 1);
  EXPECT_EQ(lost.uuid, "GPU-11111111-1111-4111-8111-111111111111");
  EXPECT_EQ(lost.minor, 1);
  EXPECT_EQ(lost.product, "Tesla T4");
  EXPECT_EQ(sysfs_pci_address(lost.pci_bus_id), "0000:5e:00.0");
  EXPECT_FALSE(lost.health.healthy);
  EXPECT_THAT(lost.health.reason, HasSubstr("GPU is lost"));
  EXPECT_TRUE(inv.gpus[0].health.healthy);
  ASSERT_FALSE(inv.warnings.empty());
  EXPECT_THAT(inv.warnings.back(), HasSubstr("procfs entry, marked unhealthy"));
}

TEST(ProcfsGpus, ParsesTheDriversInformationFileAndNamesWhatIsWrong) {
  const std::string good =
      "Model: \t\t NVIDIA A100-SXM4-40GB\nIRQ:   \t\t 148\nGPU UUID: \t GPU-d688af4e-11a5-499c-a8b7-d9bbf9837120\n"
      "Bus Location: \t 0000:07:00.0\nDevice Minor: \t 3\nGPU Excluded:\t No\n";
  auto gpu = parse_procfs_gpu_information(good);
  ASSERT_TRUE(gpu.ok()) << gpu.error().message;
  EXPECT_EQ(gpu->model, "NVIDIA A100-SXM4-40GB");
  EXPECT_EQ(gpu->uuid, "GPU-d688af4e-11a5-499c-a8b7-d9bbf9837120");
  EXPECT_EQ(gpu->bus_location, "0000:07:00.0");
  EXPECT_EQ(gpu->minor, 3);
  EXPECT_FALSE(gpu->excluded);
  EXPECT_TRUE(parse_procfs_gpu_information(good + "GPU Excluded: Yes\n")->excluded);
  struct Bad {
    std::string text;
    const char* says;
  };
  for (const auto& [text, says] : {Bad{"Bus Location: 0000:07:00.0\nDevice Minor: 3\n", "GPU UUID"},
                                   Bad{"GPU UUID: GPU-\?\?\?\?\?\?\?\?-\?\?\?\?\nBus Location: x\nDevice Minor: 1\n", "GPU UUID"},
                                   Bad{"GPU UUID: GPU-1\nDevice Minor: 1\n", "Bus Location"},
                                   Bad{"GPU UUID: GPU-1\nBus Location: x\n", "Device Minor"},
                                   Bad{"GPU UUID: GPU-1\nBus Location: x\nDevice Minor: 3a\n", "not a number"},
                                   Bad{"GPU UUID: GPU-1\x01\nBus Location: x\nDevice Minor: 3\n", "not printable"}}) {
    auto r = parse_procfs_gpu_information(text);
    ASSERT_FALSE(r.ok()) << text;
    EXPECT_THAT(r.error().message, HasSubstr(says)) << text;
  }
}

// NVIDIA's DRA attribute addressingMode (issue 29, item 2): as NVML 12.9+ reports it on
// coherent-memory systems, nothing where it is NOT_SUPPORTED (the fleet's default), and a failing
// call is a warning, never a failed GPU.
TEST(DiscoverNvidia, AddressingModeAsNvmlReportsIt) {
  testing::TempDir dir;
  testing::write_file(dir.path() + "/fleet.yaml", R"(node: {driver_version: "575.51.03", cuda_driver_version: 12090}
defaults:
  name: NVIDIA GH200 480GB
  architecture: hopper
  compute_capability: "9.0"
  memory: {total_mib: 97871}
  pci: {device_id: 0x2342}
gpus:
  - {index: 0, uuid: GPU-00000000-0000-4000-8000-000000000000, pci: {bus_id: "0000:01:00.0"}, addressing_mode: ats}
  - {index: 1, uuid: GPU-11111111-1111-4111-8111-111111111111, pci: {bus_id: "0000:02:00.0"}, addressing_mode: hmm}
  - {index: 2, uuid: GPU-22222222-2222-4222-8222-222222222222, pci: {bus_id: "0000:03:00.0"}, addressing_mode: none}
  - {index: 3, uuid: GPU-33333333-3333-4333-8333-333333333333, pci: {bus_id: "0000:04:00.0"}}
  - {index: 4, uuid: GPU-44444444-4444-4444-8444-444444444444, pci: {bus_id: "0000:05:00.0"}, addressing_mode: ats,
     fail: {calls: {nvmlDeviceGetAddressingMode: NVML_ERROR_UNKNOWN}}}
)");
  FakeNode node(dir.path() + "/fleet.yaml");
  Inventory inv = discover(node);
  ASSERT_EQ(inv.gpus.size(), 5u);
  EXPECT_EQ(inv.gpus[0].addressing_mode, "ATS");
  EXPECT_EQ(inv.gpus[1].addressing_mode, "HMM");
  EXPECT_EQ(inv.gpus[2].addressing_mode, "None");
  EXPECT_EQ(inv.gpus[3].addressing_mode, "");
  EXPECT_EQ(inv.gpus[4].addressing_mode, "");
  EXPECT_TRUE(inv.gpus[4].health.healthy);
  ASSERT_EQ(inv.warnings.size(), 1u);
  EXPECT_THAT(inv.warnings[0], HasSubstr("nvmlDeviceGetAddressingMode"));
}

TEST(DiscoverNvidia, InitFailureIsAnError) {
  testing::TempDir dir;
  testing::write_file(dir.path() + "/fleet.yaml",
                      "node: {driver_version: \"1\", cuda_driver_version: 1}\nfailures: {init: NVML_ERROR_LIB_RM_VERSION_MISMATCH}\n");
  FakeNode node(dir.path() + "/fleet.yaml");
  ASSERT_TRUE(node.ready()) << node.problem();
  auto inv = discover_nvidia(node.nvml(), node.options());
  ASSERT_FALSE(inv.ok());
  EXPECT_EQ(inv.error().code, Error::Code::Unavailable);
  EXPECT_THAT(inv.error().message, HasSubstr("nvmlInit"));
}

}  // namespace
}  // namespace kgpu
