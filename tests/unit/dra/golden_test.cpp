// Golden ResourceSlices (v1 and v1beta1) per fleet, through the production path: the fake NVML
// (loaded with dlopen like the real library), NVIDIA discovery, PCIe roots read from the fleet's
// fixture tree, build_publication and resource_slices.
// To regenerate after an intended change: KGPU_UPDATE_GOLDEN=1 ./test_dra --gtest_filter='Fleets/GoldenSlices*'
// and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dra/device_names.h"
#include "dra/pcie_roots.h"
#include "dra/slice_builder.h"
#include "nvml/discovery.h"
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

class GoldenSlices : public ::testing::TestWithParam<const char*> {};

TEST_P(GoldenSlices, MatchesGoldenFile) {
  const std::string name = GetParam();
  const fs::path fleet = fs::path(KGPU_FIXTURES_DIR) / "fleets" / (name + ".yaml");
  const fs::path golden = fs::path(KGPU_FIXTURES_DIR) / "golden" / "dra" / (name + ".json");
  const fs::path tree = fs::temp_directory_path() / ("kgpu-dra-golden-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(tree);
  const std::string tool = std::string(KGPU_FAKE_NVML_DIR) + "/kgpu-fake-nvml-fixture";
  ASSERT_EQ(std::system((tool + " " + fleet.string() + " " + tree.string()).c_str()), 0) << tool;

  ::setenv("KGPU_FAKE_NVML_FLEET", fleet.c_str(), 1);
  auto nvml = NvmlLibrary::load_file(std::string(KGPU_FAKE_NVML_DIR) + "/libnvidia-ml.so.1");
  ASSERT_TRUE(nvml.ok()) << nvml.error().message;
  NvidiaDiscoveryOptions discovery;
  discovery.sysfs_root = (tree / "sys").string();
  discovery.proc_root = (tree / "proc").string();
  discovery.dev_root = (tree / "dev").string();
  auto inventory = discover_nvidia(**nvml, discovery);
  ASSERT_TRUE(inventory.ok()) << inventory.error().message;

  SliceOptions options;
  options.node_name = "node-1";
  options.node_uid = "0f1e2d3c-0000-4000-8000-000000000001";
  options.pcie_roots = read_pcie_roots(discovery.sysfs_root, *inventory);
  // hgx-h100's first GPU is published for memory shares (issue 31), so the consumable-capacity fields
  // (and the SM count from the fake's nvmlDeviceGetNumGpuCores) reach kubernetes-models in deploy.slices.
  if (name == "hgx-h100") {
    options.memory_shared_gpus = {inventory->gpus.at(0).uuid};
    options.memory_policy = {uint64_t{1} << 30, uint64_t{1} << 30, uint64_t{1} << 30};
    options.multiprocessors_default = 4;
  }
  fs::remove_all(tree);
  auto publication = build_publication(*inventory, options);
  ASSERT_TRUE(publication.ok()) << publication.error().message;

  nlohmann::json got{
      {"notes", publication->notes}, {"v1", nlohmann::json::array()}, {"v1beta1", nlohmann::json::array()}};
  for (const auto& pool : publication->pools) {
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

INSTANTIATE_TEST_SUITE_P(Fleets, GoldenSlices, ::testing::Values("dgx-a100", "a100-mig-mixed", "hgx-h100", "gh200-x4"),
                         [](const auto& case_info) {
                           std::string n = case_info.param;
                           for (auto& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace kgpu::dra
