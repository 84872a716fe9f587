// Golden ResourceSlices (v1 and v1beta1) per fleet, through the production path: the fake NVML
// (loaded with dlopen like the real library), NVIDIA discovery, PCIe roots read from the fleet's
// fixture tree, build_publication and resource_slices.
// To regenerate after an intended change: KGPU_UPDATE_GOLDEN=1 ./test_dra --gtest_filter='Fleets/GoldenSlices*'
// and review the diff.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dra/model/device_names.h"
#include "dra/model/publication.h"
#include "dra/model/slice_limits.h"
#include "dra/publish/pcie_roots.h"
#include "dra/publish/slice_objects.h"
#include "dra/model/dynamic_mig_select.h"
#include "nvml/discovery.h"
#include "nvml/dynamic_mig_facts.h"
#include "nvml/mig_instances.h"
#include "nvml/nvml_library.h"

namespace kgpu::dra {
namespace {

namespace fs = std::filesystem;

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A fleet's publication through the production path, with its options (memory shares on
// hgx-h100's first GPU).
struct FleetPublication {
  SliceOptions options;
  Publication publication;
};

// "hgx-h100-dynamic-mig": hgx-h100 with kgpu.dra.mig.dynamic [all], the profiles read from the fake
// NVML as the daemon reads them (issue 42), so kubernetes-models judges sharedCounters and
// consumesCounters too (deploy.slices; the combined layout, which is what v1 slices of < 1.35 hold).
constexpr std::string_view kDynamicSuffix = "-dynamic-mig";

std::vector<DynamicMigLayout> dynamic_layouts(const std::shared_ptr<NvmlLibrary>& library, const Inventory& inventory) {
  NvmlLibrary& nvml = *library;
  auto mig = MigInstances::bind(library);
  EXPECT_TRUE(mig.ok()) << (mig.ok() ? "" : mig.error().message);
  if (!mig.ok()) return {};
  std::map<std::string, DynamicMigProbe> probes;
  EXPECT_TRUE(static_cast<bool>(nvml.init()));  // discovery's session has ended
  for (const auto& gpu : inventory.gpus) {
    auto handle = nvml.device_by_uuid(gpu.uuid);
    EXPECT_TRUE(handle.ok());
    if (!handle.ok()) return {};
    auto profiles = read_dynamic_mig_profiles(nvml, **mig, *handle, gpu.memory_bytes);
    EXPECT_TRUE(profiles.ok()) << (profiles.ok() ? "" : profiles.error().message);
    if (profiles.ok()) probes[gpu.uuid].profiles = std::move(*profiles);
  }
  nvml.shutdown();
  return dynamic_mig_layouts(select_dynamic_mig(inventory, {"all"}, probes, {}));
}

FleetPublication publish_fleet(const std::string& name) {
  const bool dynamic = name.ends_with(kDynamicSuffix);
  const std::string fleet_name = dynamic ? name.substr(0, name.size() - kDynamicSuffix.size()) : name;
  const fs::path fleet = fs::path(KGPU_FIXTURES_DIR) / "fleets" / (fleet_name + ".yaml");
  const fs::path tree = fs::temp_directory_path() / ("kgpu-dra-golden-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(tree);
  const std::string tool = std::string(KGPU_FAKE_NVML_DIR) + "/kgpu-fake-nvml-fixture";
  EXPECT_EQ(std::system((tool + " " + fleet.string() + " " + tree.string()).c_str()), 0) << tool;

  ::setenv("KGPU_FAKE_NVML_FLEET", fleet.c_str(), 1);
  auto nvml = NvmlLibrary::load_file(std::string(KGPU_FAKE_NVML_DIR) + "/libnvidia-ml.so.1");
  EXPECT_TRUE(nvml.ok()) << nvml.error().message;
  if (!nvml.ok()) return {};
  NvidiaDiscoveryOptions discovery;
  discovery.sysfs_root = (tree / "sys").string();
  discovery.proc_root = (tree / "proc").string();
  discovery.dev_root = (tree / "dev").string();
  auto inventory = discover_nvidia(**nvml, discovery);
  EXPECT_TRUE(inventory.ok()) << inventory.error().message;
  if (!inventory.ok()) return {};

  FleetPublication out;
  SliceOptions& options = out.options;
  options.node_name = "node-1";
  options.node_uid = "0f1e2d3c-0000-4000-8000-000000000001";
  options.pcie_roots = read_pcie_roots(discovery.sysfs_root, *inventory);
  // hgx-h100's first GPU is published for memory shares (issue 31), so the consumable-capacity fields
  // (and the SM count from the fake's nvmlDeviceGetNumGpuCores) reach kubernetes-models in deploy.slices.
  if (dynamic) options.dynamic_mig = dynamic_layouts(*nvml, *inventory);
  if (name == "hgx-h100") {
    options.memory_shared_gpus = {inventory->gpus.at(0).uuid};
    options.memory_policy = {uint64_t{1} << 30, uint64_t{1} << 30, uint64_t{1} << 30};
    options.multiprocessors_default = 4;
  }
  fs::remove_all(tree);
  auto publication = build_publication(*inventory, options);
  EXPECT_TRUE(publication.ok()) << publication.error().message;
  if (publication.ok()) out.publication = std::move(*publication);
  return out;
}

class GoldenSlices : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenSlices, MatchesGoldenFile) {
  const std::string name = GetParam();
  const fs::path golden = fs::path(KGPU_FIXTURES_DIR) / "golden" / "dra" / (name + ".json");
  auto [options, publication] = publish_fleet(name);
  ASSERT_FALSE(HasFailure());

  nlohmann::json got{
      {"notes", publication.notes}, {"v1", nlohmann::json::array()}, {"v1beta1", nlohmann::json::array()}};
  if (!publication.warnings.empty()) got["warnings"] = publication.warnings;
  for (const auto& pool : publication.pools) {
    for (const auto& d : pool.devices) EXPECT_TRUE(is_dns_label(d.name)) << d.name;
    for (const auto api : {SliceApi::V1, SliceApi::V1beta1}) {
      const auto slices = resource_slices(pool, options, 1, api);
      const auto texts = resource_slice_texts(pool, options, 1, api);
      ASSERT_EQ(texts.size(), slices.size());
      for (size_t k = 0; k < slices.size(); ++k) {
        EXPECT_EQ(texts[k], slices[k].dump()) << "direct text differs from the JSON tree";
        got[api == SliceApi::V1 ? "v1" : "v1beta1"].push_back(slices[k]);
      }
    }
  }
  const std::string text = got.dump(2) + "\n";
  if (std::getenv("KGPU_UPDATE_GOLDEN")) {
    fs::create_directories(golden.parent_path());
    std::ofstream(golden) << text;
    GTEST_SKIP() << "wrote " << golden;
  }
  ASSERT_TRUE(fs::exists(golden)) << golden << " is missing; run with KGPU_UPDATE_GOLDEN=1 and review it";
  EXPECT_EQ(text, read_file(golden)) << "slices differ from " << golden;
}

// Every fleet's slices, v1 and v1beta1, keep the API server's validation limits (issue 37: a 7g MIG
// device with a PCIe root had 33 attributes and capacities, and the API server refused the node's
// whole slice). The fleets are read from the folder, so a new one is covered without a change here.
TEST(SliceApiLimits, EveryFleetIsWithinTheApiLimits) {
  size_t fleets = 0, devices = 0, with_root = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(KGPU_FIXTURES_DIR) / "fleets")) {
    if (entry.path().extension() != ".yaml") continue;
    const std::string name = entry.path().stem().string();
    ++fleets;
    auto [options, publication] = publish_fleet(name);
    ASSERT_FALSE(HasFailure()) << name;
    for (const auto& pool : publication.pools) {
      for (const auto& d : pool.devices) {
        ++devices;
        if (d.attribute(kPcieRootAttribute)) ++with_root;
        // NVIDIA's attributes stay: only kgpu's extras may be left out.
        for (std::string_view kept : {"type", "uuid", "productName", "cudaComputeCapability", "driverVersion"})
          EXPECT_NE(d.attribute(kept), nullptr) << name << " " << d.name << " lost " << kept;
      }
      for (const auto api : {SliceApi::V1, SliceApi::V1beta1})
        for (const auto& slice : resource_slices(pool, options, 1, api))
          EXPECT_EQ(slice_limit_violations(slice), std::vector<std::string>{}) << name << " " << api_version(api);
    }
  }
  EXPECT_GE(fleets, 9u);
  EXPECT_GT(devices, 0u);
  EXPECT_GT(with_root, 0u) << "no fleet's devices have a PCIe root: the fixture trees must lay devices under one";
}

// The 7g.80gb of h100-mig-7g is the largest MIG device: with its PCIe root it had 33 entries; kgpu's
// MIG slice counts are what it gives up, with a note, and NVIDIA's memorySlice0..7 stay.
TEST(SliceApiLimits, LargestMigDeviceGivesUpKgpuExtrasOnly) {
  auto [options, publication] = publish_fleet("h100-mig-7g");
  ASSERT_FALSE(HasFailure());
  ASSERT_FALSE(publication.pools.empty());
  const auto& devices = publication.pools.front().devices;
  auto seven = std::find_if(devices.begin(), devices.end(), [](const DraDevice& d) {
    auto p = d.attribute("profile");
    return p && std::get<std::string>(*p) == "7g.80gb";
  });
  ASSERT_NE(seven, devices.end());
  EXPECT_EQ(attribute_and_capacity_count(*seven), kMaxAttributesAndCapacitiesPerDevice);
  EXPECT_NE(seven->attribute(kPcieRootAttribute), nullptr);
  for (std::string_view slice : {"memorySlice0", "memorySlice7", "multiprocessors", "memory"})
    EXPECT_NE(seven->capacity_of(slice), nullptr) << slice;
  EXPECT_EQ(seven->capacity_of("computeInstanceSlices"), nullptr);
  const bool noted = std::any_of(publication.warnings.begin(), publication.warnings.end(), [](const std::string& n) {
    return n.find("over the API's 32 per device; left out kgpu's computeInstanceSlices") != std::string::npos;
  });
  EXPECT_TRUE(noted) << "the operator is told what was left out";
}

// The checker itself: each limit it knows is reported with the device's name.
TEST(SliceApiLimits, CheckerNamesEachBrokenLimit) {
  nlohmann::json device = {{"name", "gpu-0"}, {"attributes", nlohmann::json::object()}, {"capacity", nlohmann::json::object()}};
  for (int i = 0; i < 33; ++i) device["attributes"]["a" + std::to_string(i)] = {{"int", i}};
  device["attributes"]["bad name!"] = {{"int", 1}};
  device["attributes"]["long"] = {{"string", std::string(65, 'x')}};
  device["taints"] = nlohmann::json::array();
  for (int i = 0; i < 5; ++i) device["taints"].push_back({{"key", "k" + std::to_string(i)}, {"effect", "NoSchedule"}});
  nlohmann::json slice = {{"spec", {{"devices", nlohmann::json::array({device})}}}};
  for (int i = 0; i < 64; ++i) slice["spec"]["devices"].push_back({{"name", "d" + std::to_string(i)}});
  const auto problems = slice_limit_violations(slice);
  std::string all;
  for (const auto& p : problems) all += p + "\n";
  for (const char* expected : {"device gpu-0: 35 attributes and capacities, over the API's 32",
                               "device gpu-0: attributes name \"bad name!\" is not a qualified name",
                               "device gpu-0: attribute long is longer than 64 characters",
                               "device gpu-0: 5 taints, over the 4 allowed",
                               "65 devices, over the 64 a slice may hold when a device has taints or counters"})
    EXPECT_NE(all.find(expected), std::string::npos) << expected << "\nin:\n" << all;
}

INSTANTIATE_TEST_SUITE_P(Fleets, GoldenSlices, ::testing::Values("dgx-a100", "a100-mig-mixed", "hgx-h100", "gh200-x4", "h100-mig-7g",
                                                           "hgx-h100-dynamic-mig"),
                         [](const auto& case_info) {
                           std::string n = case_info.param;
                           for (auto& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace kgpu::dra
