// The DRA slice builder on synthetic inventories: health and MIG layout changes, NVIDIA attribute
// names and types, device names, the v1 / v1beta1 shapes, the per-slice device limit.
#include <gtest/gtest.h>

#include "dra/model/device_names.h"
#include "dra/model/publication.h"
#include "dra/publish/slice_objects.h"
#include "unit/dra/synthetic_node.h"

namespace kgpu::dra {
namespace {

SliceOptions options() {
  SliceOptions o;
  o.node_name = "node-1";
  o.node_uid = "0f1e2d3c-0000-4000-8000-000000000001";
  return o;
}

Publication publish(const Inventory& inv) {
  auto p = build_publication(inv, options());
  EXPECT_TRUE(p.ok()) << p.error().message;
  return p.ok() ? *p : Publication{};
}

std::vector<std::string> names(const DriverPool& pool) {
  std::vector<std::string> out;
  for (const auto& d : pool.devices) out.push_back(d.name);
  return out;
}

const DraDevice* find(const DriverPool& pool, const std::string& name) {
  for (const auto& d : pool.devices)
    if (d.name == name) return &d;
  return nullptr;
}

TEST(DraSlices, FullGpusWithNvidiaAttributeNamesAndTypes) {
  const auto p = publish(testing::a100_node(2, 0));
  ASSERT_EQ(p.pools.size(), 1u);
  EXPECT_EQ(p.pools[0].driver, "gpu.nvidia.com");
  EXPECT_EQ(p.pools[0].pool, "node-1");
  EXPECT_EQ(names(p.pools[0]), (std::vector<std::string>{"gpu-0", "gpu-1"}));
  const DraDevice& gpu1 = p.pools[0].devices[1];
  auto a = [&](std::string_view name) { return gpu1.attribute(name) ? *gpu1.attribute(name) : AttributeValue(false); };
  EXPECT_EQ(a("type"), AttributeValue(std::string("gpu")));
  EXPECT_EQ(a("uuid"), AttributeValue(std::string("GPU-00000000-0000-4000-8000-000000000001")));
  EXPECT_EQ(a("productName"), AttributeValue(std::string("NVIDIA A100-SXM4-40GB")));
  EXPECT_EQ(a("brand"), AttributeValue(std::string("Nvidia"))) << "go-nvlib's spelling, as NVIDIA's DRA driver";
  EXPECT_EQ(a("architecture"), AttributeValue(std::string("Ampere")));
  EXPECT_EQ(a("cudaComputeCapability"), AttributeValue(VersionString{"8.0.0"}));
  EXPECT_EQ(a("driverVersion"), AttributeValue(VersionString{"550.54.15"}));
  EXPECT_EQ(a("cudaDriverVersion"), AttributeValue(VersionString{"12.4.0"}));
  EXPECT_EQ(a("index"), AttributeValue(int64_t{1}));
  EXPECT_EQ(a("minor"), AttributeValue(int64_t{1}));
  EXPECT_EQ(a("pcieBusID"), AttributeValue(std::string("0000:02:00.0")));
  EXPECT_EQ(a(kPciBusIdAttribute), AttributeValue(std::string("0000:02:00.0")));
  EXPECT_EQ(a(kNvlinkIslandAttribute), AttributeValue(std::string("nvlink-0")));
  EXPECT_EQ(gpu1.attribute(kPcieRootAttribute), nullptr) << "no root known: left out, as NVIDIA does";
  EXPECT_EQ(gpu1.capacity, (std::vector<Capacity>{{"memory", uint64_t{40} << 30}}));
}

// NVIDIA's addressingMode where NVML reports one (coherent-memory systems), on the GPU and its MIG
// devices; absent otherwise, as NVIDIA's driver (issue 29, item 2).
TEST(DraSlices, AddressingModeOnlyWhereNvmlReportsIt) {
  Inventory inv = testing::a100_node(2, 1);
  inv.gpus[0].addressing_mode = "ATS";
  const auto p = publish(inv);
  for (const auto& d : p.pools[0].devices) {
    const AttributeValue* mode = d.attribute("addressingMode");
    if (d.name == "gpu-0" || d.name.rfind("gpu-0-", 0) == 0) {
      ASSERT_NE(mode, nullptr) << d.name;
      EXPECT_EQ(*mode, AttributeValue(std::string("ATS")));
    } else {
      EXPECT_EQ(mode, nullptr) << d.name;
    }
  }
}

TEST(DraSlices, PcieRootPublishedWhenKnown) {
  SliceOptions o = options();
  o.pcie_roots["0000:01:00.0"] = "pci0000:00";
  auto p = build_publication(testing::a100_node(2, 0), o);
  ASSERT_TRUE(p.ok());
  ASSERT_NE(p->pools[0].devices[0].attribute(kPcieRootAttribute), nullptr);
  EXPECT_EQ(*p->pools[0].devices[0].attribute(kPcieRootAttribute), AttributeValue(std::string("pci0000:00")));
  EXPECT_EQ(p->pools[0].devices[1].attribute(kPcieRootAttribute), nullptr);
}

// Issue 29, item 8: health as device taints, as NVIDIA's DRA driver publishes it. The device stays
// (a running claim's device stays visible) with the XID; recovery lifts the taint.
TEST(DraSlices, UnhealthyGpuStaysWithItsXidTaintAndLosesItWhenItRecovers) {
  Inventory inv = testing::a100_node(4, 0);
  const auto before = publish(inv);
  inv.gpus[2].health = {false, "XID 79 (GPU has fallen off the bus)", 79};
  const auto after = publish(inv);
  EXPECT_EQ(names(after.pools[0]), (std::vector<std::string>{"gpu-0", "gpu-1", "gpu-2", "gpu-3"}));
  EXPECT_EQ(find(after.pools[0], "gpu-2")->taints,
            (std::vector<DeviceTaint>{{"gpu.nvidia.com/xid", "79", kTaintNoSchedule}}));
  EXPECT_TRUE(find(after.pools[0], "gpu-1")->taints.empty());
  ASSERT_EQ(after.notes.size(), 1u);
  EXPECT_NE(after.notes[0].find("XID 79"), std::string::npos) << after.notes[0];
  EXPECT_NE(before, after);
  // Where the API server keeps no taints, the device is left out, as before taints.
  EXPECT_EQ(names(with_taint_support(after.pools[0], TaintSupport::Off)),
            (std::vector<std::string>{"gpu-0", "gpu-1", "gpu-3"}));
  inv.gpus[2].health = {};
  EXPECT_EQ(publish(inv), before);
}

TEST(DraSlices, TaintKeysEffectsAndTheOperatorsNoExecuteXids) {
  Inventory inv = testing::a100_node(4, 0);
  inv.gpus[0].health = {false, "GPU is lost (NVML_ERROR_GPU_IS_LOST)"};
  inv.gpus[1].health = {false, "XID 48 (DBE)", 48};
  inv.gpus[2].health.informational_xid = 13;  // an application's error: the policy ignores it
  auto o = options();
  o.drivers.nvidia = "gpu.example.com";
  o.no_execute_xids = {48};
  auto p = build_publication(inv, o);
  ASSERT_TRUE(p.ok());
  const auto& pool = p->pools[0];
  EXPECT_EQ(find(pool, "gpu-0")->taints, (std::vector<DeviceTaint>{{"gpu.example.com/gpu-lost", "", kTaintNoSchedule}}));
  EXPECT_EQ(find(pool, "gpu-1")->taints, (std::vector<DeviceTaint>{{"gpu.example.com/xid", "48", kTaintNoExecute}}));
  EXPECT_EQ(find(pool, "gpu-2")->taints, (std::vector<DeviceTaint>{{"gpu.example.com/xid", "13", kTaintNone}}));
  EXPECT_TRUE(find(pool, "gpu-3")->taints.empty());
  // A server before effect None keeps the others; one without taints keeps the healthy devices.
  const auto no_none = with_taint_support(pool, TaintSupport::NoInformational);
  EXPECT_TRUE(find(no_none, "gpu-2")->taints.empty());
  EXPECT_EQ(find(no_none, "gpu-1")->taints.size(), 1u);
  const auto off = with_taint_support(pool, TaintSupport::Off);
  EXPECT_EQ(names(off), (std::vector<std::string>{"gpu-2", "gpu-3"}));
  EXPECT_TRUE(find(off, "gpu-2")->taints.empty());
}

TEST(DraSlices, TaintsAreWrittenInBothApiVersionsAndShrinkTheSlicesTo64Devices) {
  Inventory inv = testing::a100_node(2, 0);
  inv.gpus[1].health = {false, "XID 79", 79};
  const auto pool = publish(inv).pools[0];
  const auto v1 = resource_slices(pool, options(), 1, SliceApi::V1);
  EXPECT_EQ(v1[0]["spec"]["devices"][1]["taints"],
            (nlohmann::json::array({{{"key", "gpu.nvidia.com/xid"}, {"value", "79"}, {"effect", "NoSchedule"}}})));
  EXPECT_FALSE(v1[0]["spec"]["devices"][0].contains("taints"));
  const auto beta = resource_slices(pool, options(), 1, SliceApi::V1beta1);
  EXPECT_EQ(beta[0]["spec"]["devices"][1]["basic"]["taints"], v1[0]["spec"]["devices"][1]["taints"]);
  for (auto api : {SliceApi::V1, SliceApi::V1beta1})
    EXPECT_EQ(resource_slice_texts(pool, options(), 1, api)[0], resource_slices(pool, options(), 1, api)[0].dump());
  // 100 devices, one tainted: two slices of at most 64 (ResourceSliceMaxDevicesWithAdvancedFeatures).
  DriverPool big = pool;
  big.devices.assign(100, pool.devices[0]);
  for (size_t i = 0; i < big.devices.size(); ++i) big.devices[i].name = "gpu-" + std::to_string(i);
  big.devices[7].taints = pool.devices[1].taints;
  const auto slices = resource_slices(big, options(), 1, SliceApi::V1);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0]["spec"]["devices"].size(), 64u);
  EXPECT_EQ(slices[1]["spec"]["devices"].size(), 36u);
  big.devices[7].taints.clear();
  EXPECT_EQ(resource_slices(big, options(), 1, SliceApi::V1).size(), 1u);
}

TEST(DraSlices, AllGpusUnhealthyKeepsAnEmptyPoolSoTheDevicesAreRetracted) {
  Inventory inv = testing::a100_node(1, 0);
  inv.gpus[0].health = {false, "XID 48", 48};
  const auto p = publish(inv);
  ASSERT_EQ(p.pools.size(), 1u);
  ASSERT_EQ(p.pools[0].devices.size(), 1u);  // with its taint; without taints served:
  const auto off = with_taint_support(p.pools[0], TaintSupport::Off);
  EXPECT_TRUE(off.devices.empty());
  const auto slices = resource_slices(off, options(), 3, SliceApi::V1);
  ASSERT_EQ(slices.size(), 1u);
  EXPECT_EQ(slices[0]["spec"]["devices"], nlohmann::json::array());
  EXPECT_EQ(slices[0]["spec"]["pool"]["generation"], 3);
}

TEST(DraSlices, MigGpuPublishesItsMigDevicesNotTheFullGpu) {
  const auto p = publish(testing::a100_node(2, 1));
  const auto& pool = p.pools[0];
  ASSERT_EQ(pool.devices.size(), 8u);
  EXPECT_EQ(find(pool, "gpu-0"), nullptr);
  ASSERT_NE(find(pool, "gpu-1"), nullptr);
  const DraDevice* mig = find(pool, "gpu-0-mig-1g5gb-7-0");
  ASSERT_NE(mig, nullptr);
  EXPECT_EQ(*mig->attribute("type"), AttributeValue(std::string("mig")));
  EXPECT_EQ(*mig->attribute("uuid"), AttributeValue(std::string("MIG-0-0")));
  EXPECT_EQ(*mig->attribute("parentUUID"), AttributeValue(std::string("GPU-00000000-0000-4000-8000-000000000000")));
  EXPECT_EQ(*mig->attribute("profile"), AttributeValue(std::string("1g.5gb")));
  EXPECT_EQ(*mig->attribute("parentMinor"), AttributeValue(int64_t{0}));
  EXPECT_EQ(*mig->attribute("productName"), AttributeValue(std::string("NVIDIA A100-SXM4-40GB")));
  EXPECT_EQ(*mig->attribute("cudaComputeCapability"), AttributeValue(VersionString{"8.0.0"}));
  EXPECT_EQ(mig->attribute("index"), nullptr) << "index means the GPU's own index; MIG has parentIndex";
  EXPECT_EQ(*mig->capacity_of("memory"), uint64_t{4864} << 20);
  EXPECT_EQ(*mig->capacity_of("multiprocessors"), 14u);
  EXPECT_EQ(*mig->capacity_of("copyEngines"), 1u);
  EXPECT_EQ(*mig->capacity_of("gpuInstanceSlices"), 1u);
  for (const char* c : {"decoders", "encoders", "jpegEngines", "ofaEngines", "computeInstanceSlices"})
    EXPECT_NE(mig->capacity_of(c), nullptr) << c;
}

TEST(DraSlices, MigLayoutChangeReplacesTheMigDevices) {
  Inventory inv = testing::a100_node(1, 1);
  auto& g = inv.gpus[0];
  g.mig_devices.resize(1);
  g.mig_devices[0].profile = "7g.40gb";
  g.mig_devices[0].gpu_instance_id = 0;
  EXPECT_EQ(names(publish(inv).pools[0]), (std::vector<std::string>{"gpu-0-mig-7g40gb-0-0"}));
  g.mig_enabled = false;
  g.mig_devices.clear();
  EXPECT_EQ(names(publish(inv).pools[0]), (std::vector<std::string>{"gpu-0"}));
}

TEST(DraSlices, UnhealthyMigDeviceAloneIsTainted_UnhealthyParentTaintsAllItsMigDevices) {
  Inventory inv = testing::a100_node(2, 2);
  inv.gpus[0].mig_devices[3].health = {false, "XID 94", 94};
  auto p = publish(inv);
  EXPECT_EQ(p.pools[0].devices.size(), 14u);
  for (const auto& d : p.pools[0].devices)
    EXPECT_EQ(d.taints.empty(), d.name != "gpu-0-mig-1g5gb-10-0") << d.name;
  auto off = with_taint_support(p.pools[0], TaintSupport::Off);
  EXPECT_EQ(off.devices.size(), 13u);
  EXPECT_EQ(find(off, "gpu-0-mig-1g5gb-10-0"), nullptr);
  // A GPU-wide mark that only the parent carries (lost at discovery) holds for its MIG devices.
  inv.gpus[1].health = {false, "GPU is lost"};
  p = publish(inv);
  EXPECT_EQ(p.pools[0].devices.size(), 14u);
  off = with_taint_support(p.pools[0], TaintSupport::Off);
  EXPECT_EQ(off.devices.size(), 6u);
  for (const auto& d : off.devices) EXPECT_EQ(d.name.rfind("gpu-0-", 0), 0u) << d.name;
}

TEST(DraSlices, DeviceNamesAreDnsLabelsForOddProfiles) {
  Inventory inv = testing::a100_node(1, 1);
  const char* profiles[] = {"1c.3g.20gb", "1g.10gb+me", "1g.5gb+me+gfx", "MIG 2g.20gb", "", "7g.80gb", "4g.40gb"};
  for (size_t i = 0; i < inv.gpus[0].mig_devices.size(); ++i) inv.gpus[0].mig_devices[i].profile = profiles[i];
  const auto p = publish(inv);
  ASSERT_EQ(p.pools[0].devices.size(), 7u);
  for (const auto& d : p.pools[0].devices) EXPECT_TRUE(is_dns_label(d.name)) << d.name;
  EXPECT_EQ(p.pools[0].devices[0].name, "gpu-0-mig-1c3g20gb-7-0");
  EXPECT_EQ(p.pools[0].devices[1].name, "gpu-0-mig-1g10gb-me-8-0") << "'+' becomes '-', as NVIDIA's driver has it";
}

// Issue 29, item 3: with the placement NVML reports, MIG devices are named and sized as NVIDIA's
// DRA driver names them (v25.12): profile, GI profile id and placement start, plus one
// memorySlice<i> capacity per memory slice the GPU instance covers.
TEST(DraSlices, PlacedMigDevicesAreNamedAndSlicedAsNvidiaDoes) {
  Inventory inv = testing::a100_node(1, 1);
  auto& migs = inv.gpus[0].mig_devices;
  migs.resize(3);
  migs[0].profile = "3g.20gb";
  migs[0].gi_profile_id = 9;
  migs[0].placement_start = 4;
  migs[0].placement_size = 4;
  migs[1].profile = "1g.10gb+me";
  migs[1].gi_profile_id = 20;
  migs[1].placement_start = 0;
  migs[1].placement_size = 1;
  // A compute instance of a third of its GPU instance: kgpu's extra, named with its CI id.
  migs[2].profile = "1c.3g.20gb";
  migs[2].gi_profile_id = 9;
  migs[2].placement_start = 0;
  migs[2].placement_size = 4;
  migs[2].gpu_instance_slices = 3;
  migs[2].compute_instance_slices = 1;
  migs[2].compute_instance_id = 2;
  const auto p = publish(inv);
  EXPECT_EQ(names(p.pools[0]), (std::vector<std::string>{"gpu-0-mig-3g20gb-9-4", "gpu-0-mig-1g10gb-me-20-0",
                                                          "gpu-0-mig-1c3g20gb-9-0-2"}));
  const DraDevice& big = p.pools[0].devices[0];
  for (const char* slice : {"memorySlice4", "memorySlice5", "memorySlice6", "memorySlice7"})
    ASSERT_NE(big.capacity_of(slice), nullptr) << slice;
  EXPECT_EQ(*big.capacity_of("memorySlice4"), 1u);
  EXPECT_EQ(big.capacity_of("memorySlice3"), nullptr);
  EXPECT_EQ(big.capacity_of("memorySlice8"), nullptr);
  EXPECT_TRUE(std::is_sorted(big.capacity.begin(), big.capacity.end(),
                             [](const Capacity& a, const Capacity& b) { return a.name < b.name; }));
  EXPECT_NE(p.pools[0].devices[1].capacity_of("memorySlice0"), nullptr);
  EXPECT_EQ(p.pools[0].devices[1].capacity_of("memorySlice1"), nullptr);
}

TEST(DraSlices, DuplicateDeviceNameIsANoteNotASecondDevice) {
  Inventory inv = testing::a100_node(2, 0);
  inv.gpus[1].minor = 0;
  const auto p = publish(inv);
  EXPECT_EQ(names(p.pools[0]), (std::vector<std::string>{"gpu-0"}));
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("already used"), std::string::npos) << p.notes[0];
}

TEST(DraSlices, UnparsableVersionIsLeftOutWithANote) {
  Inventory inv = testing::a100_node(1, 0);
  inv.driver_version = "";
  const auto p = publish(inv);
  EXPECT_EQ(p.pools[0].devices[0].attribute("driverVersion"), nullptr);
  ASSERT_EQ(p.notes.size(), 1u);
  EXPECT_NE(p.notes[0].find("driverVersion"), std::string::npos);
}

TEST(DraSlices, UnpublishableStringsAreLeftOutWithANoteAndTheRestRendersAsJson) {
  Inventory inv = testing::a100_node(2, 0);
  inv.gpus[0].product = "NVIDIA \xff\xfe broken";
  inv.gpus[1].product = std::string(65, 'x');
  const auto p = publish(inv);
  ASSERT_EQ(p.pools[0].devices.size(), 2u);
  EXPECT_EQ(p.pools[0].devices[0].attribute("productName"), nullptr);
  EXPECT_EQ(p.pools[0].devices[1].attribute("productName"), nullptr);
  ASSERT_EQ(p.notes.size(), 2u);
  EXPECT_NE(p.notes[0].find("productName is not UTF-8"), std::string::npos) << p.notes[0];
  EXPECT_NE(p.notes[1].find("productName is longer than 64 characters"), std::string::npos) << p.notes[1];
  // dump() throws on invalid UTF-8: nothing that reaches the JSON may be invalid.
  EXPECT_NO_THROW(resource_slices(p.pools[0], options(), 1, SliceApi::V1)[0].dump());
}

TEST(DraSlices, VendorsGetTheirOwnDriverPools) {
  Inventory inv = testing::a100_node(1, 0);
  Gpu amd;
  amd.vendor = Vendor::Amd;
  amd.index = 1;
  amd.minor = 1;
  amd.uuid = "amd-0";
  amd.product = "AMD Instinct MI300X";
  inv.gpus.push_back(amd);
  Gpu fpga;
  fpga.vendor = Vendor::Generic;
  fpga.uuid = "fpga-0";
  inv.gpus.push_back(fpga);
  inv.topology = {};
  SliceOptions o = options();
  o.drivers.nvidia = "gpu.example.com";
  auto p = build_publication(inv, o);
  ASSERT_TRUE(p.ok());
  ASSERT_EQ(p->pools.size(), 2u);
  EXPECT_EQ(p->pools[0].driver, "gpu.example.com");
  EXPECT_EQ(p->pools[1].driver, "gpu.amd.com");
  EXPECT_EQ(*p->pools[1].devices[0].attribute("type"), AttributeValue(std::string("amdgpu")));
  ASSERT_EQ(p->notes.size(), 1u);
  EXPECT_NE(p->notes[0].find("fpga-0"), std::string::npos);
}

TEST(DraSlices, InvalidNodeOrDriverNameIsAnError) {
  SliceOptions o = options();
  o.node_name = "Node_1";
  auto p = build_publication(testing::a100_node(1, 0), o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("Node_1"), std::string::npos);
  o = options();
  o.drivers.intel = "gpu..intel";
  p = build_publication(testing::a100_node(1, 0), o);
  ASSERT_FALSE(p.ok());
  EXPECT_NE(p.error().message.find("gpu..intel"), std::string::npos);
}

TEST(DraSlices, V1AndV1beta1Shapes) {
  const auto p = publish(testing::a100_node(1, 0));
  const auto v1 = resource_slices(p.pools[0], options(), 5, SliceApi::V1);
  const auto beta = resource_slices(p.pools[0], options(), 5, SliceApi::V1beta1);
  ASSERT_EQ(v1.size(), 1u);
  ASSERT_EQ(beta.size(), 1u);
  EXPECT_EQ(v1[0]["apiVersion"], "resource.k8s.io/v1");
  EXPECT_EQ(beta[0]["apiVersion"], "resource.k8s.io/v1beta1");
  EXPECT_EQ(v1[0]["metadata"]["name"], "node-1-gpu.nvidia.com-0");
  EXPECT_EQ(v1[0]["metadata"]["ownerReferences"][0]["kind"], "Node");
  EXPECT_EQ(v1[0]["metadata"]["ownerReferences"][0]["uid"], options().node_uid);
  EXPECT_EQ(v1[0]["spec"]["nodeName"], "node-1");
  EXPECT_EQ(v1[0]["spec"]["pool"], (nlohmann::json{{"name", "node-1"}, {"generation", 5}, {"resourceSliceCount", 1}}));
  const auto& d1 = v1[0]["spec"]["devices"][0];
  const auto& db = beta[0]["spec"]["devices"][0];
  EXPECT_EQ(d1["capacity"]["memory"], (nlohmann::json{{"value", "40Gi"}}));
  EXPECT_EQ(d1["attributes"]["driverVersion"], (nlohmann::json{{"version", "550.54.15"}}));
  EXPECT_EQ(d1["attributes"]["index"], (nlohmann::json{{"int", 0}}));
  EXPECT_EQ(d1["attributes"]["type"], (nlohmann::json{{"string", "gpu"}}));
  EXPECT_EQ(db["basic"]["attributes"], d1["attributes"]);
  EXPECT_EQ(db["basic"]["capacity"], d1["capacity"]);
  EXPECT_FALSE(db.contains("attributes"));
}

TEST(DraSlices, NoOwnerReferenceWithoutTheNodeUid) {
  SliceOptions o = options();
  o.node_uid.clear();
  const auto slices = resource_slices(DriverPool{"gpu.nvidia.com", "node-1", {}}, o, 1, SliceApi::V1);
  EXPECT_FALSE(slices[0]["metadata"].contains("ownerReferences"));
}

TEST(DraSlices, MoreThan128DevicesSplitIntoSlicesOfOnePool) {
  const auto p = publish(testing::a100_node(20, 20));  // 140 MIG devices
  ASSERT_EQ(p.pools[0].devices.size(), 140u);
  const auto slices = resource_slices(p.pools[0], options(), 2, SliceApi::V1);
  ASSERT_EQ(slices.size(), 2u);
  EXPECT_EQ(slices[0]["spec"]["devices"].size(), 128u);
  EXPECT_EQ(slices[1]["spec"]["devices"].size(), 12u);
  for (const auto& s : slices) {
    EXPECT_EQ(s["spec"]["pool"]["resourceSliceCount"], 2);
    EXPECT_EQ(s["spec"]["pool"]["name"], "node-1");
  }
  EXPECT_EQ(slices[1]["metadata"]["name"], "node-1-gpu.nvidia.com-1");
}

TEST(DraSlices, DirectTextEqualsTheJsonTreeDumped) {
  Inventory inv = testing::a100_node(20, 19);  // two slices; MIG and full GPUs
  inv.gpus[19].product = "A \"quoted\" \\ name\twith\x01control \xc3\xa9";
  inv.gpus[3].mig_devices[2].health = {false, "XID 94"};
  const auto p = publish(inv);
  for (const auto api : {SliceApi::V1, SliceApi::V1beta1})
    for (const bool with_uid : {true, false}) {
      SliceOptions o = options();
      if (!with_uid) o.node_uid.clear();
      const auto trees = resource_slices(p.pools[0], o, 42, api);
      const auto texts = resource_slice_texts(p.pools[0], o, 42, api);
      ASSERT_EQ(texts.size(), trees.size());
      for (size_t k = 0; k < trees.size(); ++k) EXPECT_EQ(texts[k], trees[k].dump()) << k;
    }
  const DriverPool empty{"gpu.nvidia.com", "node-1", {}};
  EXPECT_EQ(resource_slice_texts(empty, options(), 1, SliceApi::V1)[0],
            resource_slices(empty, options(), 1, SliceApi::V1)[0].dump());
}

TEST(DraSlices, DeterministicOutput) {
  const Inventory inv = testing::a100_node(16, 16);
  const auto a = publish(inv);
  const auto b = publish(inv);
  EXPECT_EQ(a, b);
  EXPECT_EQ(resource_slices(a.pools[0], options(), 1, SliceApi::V1)[0].dump(),
            resource_slices(b.pools[0], options(), 1, SliceApi::V1)[0].dump());
}

TEST(DraAttributeValues, Semver) {
  EXPECT_EQ(to_semver("8.0"), "8.0.0");
  EXPECT_EQ(to_semver("550.54.15"), "550.54.15");
  EXPECT_EQ(to_semver("535.104.05"), "535.104.5");
  EXPECT_EQ(to_semver("12"), "12.0.0");
  EXPECT_EQ(to_semver(""), std::nullopt);
  EXPECT_EQ(to_semver("1.2.3.4"), std::nullopt);
  EXPECT_EQ(to_semver("550.54.15-beta"), std::nullopt);
  EXPECT_EQ(to_semver("1..2"), std::nullopt);
}

// A selector written for NVIDIA's DRA driver (`device.attributes["gpu.nvidia.com"].architecture ==
// "Ada Lovelace"`) compares the exact string go-nvlib gives.
TEST(DraAttributeValues, BrandAndArchitectureAsGoNvlibSpellsThem) {
  EXPECT_EQ(nvidia_dra_architecture("ada-lovelace"), "Ada Lovelace");
  EXPECT_EQ(nvidia_dra_architecture("hopper"), "Hopper");
  EXPECT_EQ(nvidia_dra_architecture("blackwell"), "Blackwell");
  EXPECT_EQ(nvidia_dra_architecture(""), "Unknown");
  EXPECT_EQ(nvidia_dra_architecture("fermi"), "Fermi") << "no go-nvlib entry: capitalised";
  EXPECT_EQ(nvidia_dra_brand("tesla"), "Tesla");
  EXPECT_EQ(nvidia_dra_brand("nvidia-cloud-gaming"), "NvidiaCloudGaming");
  EXPECT_EQ(nvidia_dra_brand("geforce-rtx"), "GeForceRTX");
  EXPECT_EQ(nvidia_dra_brand("nvs"), "NVS");
  EXPECT_EQ(nvidia_dra_brand(""), "Unknown");
}

TEST(DraAttributeValues, Quantities) {
  EXPECT_EQ(binary_si_quantity(0), "0");
  EXPECT_EQ(binary_si_quantity(14), "14");
  EXPECT_EQ(binary_si_quantity(1536), "1536");
  EXPECT_EQ(binary_si_quantity(uint64_t{4864} << 20), "4864Mi");
  EXPECT_EQ(binary_si_quantity(uint64_t{40} << 30), "40Gi");
}

TEST(DraAttributeValues, PciBusIds) {
  EXPECT_EQ(normalize_pci_bus_id("00000000:0F:00.0"), "0000:0f:00.0");
  EXPECT_EQ(normalize_pci_bus_id("0000:C1:00.0"), "0000:c1:00.0");
  EXPECT_EQ(normalize_pci_bus_id(""), "");
}

TEST(DraAttributeValues, DnsNames) {
  EXPECT_TRUE(is_dns_label("gpu-0-mig-1g5gb-7-0"));
  EXPECT_FALSE(is_dns_label("gpu-0-"));
  EXPECT_FALSE(is_dns_label("GPU-0"));
  EXPECT_FALSE(is_dns_label(std::string(64, 'a')));
  EXPECT_TRUE(is_dns_subdomain("gpu.nvidia.com"));
  EXPECT_FALSE(is_dns_subdomain("gpu..nvidia.com"));
  EXPECT_FALSE(is_dns_subdomain(".gpu"));
}

TEST(DraNvlinkIslands, PairsSwitchesAndFabric) {
  Inventory inv = testing::a100_node(4, 0);
  inv.topology.nvswitch = false;
  for (auto& row : inv.topology.links)
    for (auto& l : row) l.nvlinks = 0;
  inv.topology.links[0][1].nvlinks = inv.topology.links[1][0].nvlinks = 4;
  inv.topology.links[2][3].nvlinks = inv.topology.links[3][2].nvlinks = 4;
  EXPECT_EQ(nvlink_islands(inv), (std::vector<std::string>{"nvlink-0", "nvlink-0", "nvlink-2", "nvlink-2"}));
  inv.topology.links[2][3].nvlinks = inv.topology.links[3][2].nvlinks = 0;
  EXPECT_EQ(nvlink_islands(inv), (std::vector<std::string>{"nvlink-0", "nvlink-0", "nvlink-2", "nvlink-3"}));
  inv.topology.nvswitch = true;
  EXPECT_EQ(nvlink_islands(inv), std::vector<std::string>(4, "nvlink-0"));
  inv.gpus[1].fabric_cluster_uuid = "5f2a9c4e-1b7d-4e3a-9c0f-6d8e2a1b3c4d";
  inv.gpus[1].fabric_clique = 1;
  EXPECT_EQ(nvlink_islands(inv)[1], "5f2a9c4e-1b7d-4e3a-9c0f-6d8e2a1b3c4d.1");
  inv.topology = {};
  EXPECT_EQ(nvlink_islands(inv)[3], "nvlink-3") << "no topology: every GPU alone";
}

TEST(DraNvlinkIslands, IslandsDoNotMoveWhenAGpuTurnsUnhealthy) {
  Inventory inv = testing::a100_node(4, 0);
  inv.gpus[0].health = {false, "XID 79"};
  const auto p = publish(inv);
  for (const auto& d : p.pools[0].devices)
    EXPECT_EQ(*d.attribute(kNvlinkIslandAttribute), AttributeValue(std::string("nvlink-0"))) << d.name;
}

}  // namespace
}  // namespace kgpu::dra
