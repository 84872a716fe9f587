// Preferred allocation on the shipped fleets, discovered through the fake NVML exactly as the
// daemon discovers a node: the topology comes from NVML (NVSwitch, NVLink, PCIe ancestors) and
// sysfs NUMA nodes. Optimal against brute force on every subset; the expected picks by name.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>

#include "nvml/discovery.h"
#include "nvml/nvml_library.h"
#include "unit/alloc/brute_force.h"

namespace kgpu {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;

Inventory discover_fleet(const std::string& fleet_name) {
  const fs::path fleet = fs::path(KGPU_FIXTURES_DIR) / "fleets" / (fleet_name + ".yaml");
  const fs::path tree = fs::temp_directory_path() / ("kgpu-alloc-" + std::to_string(::getpid()) + "-" + fleet_name);
  fs::remove_all(tree);
  const std::string tool = std::string(KGPU_FAKE_NVML_DIR) + "/kgpu-fake-nvml-fixture";
  EXPECT_EQ(std::system((tool + " " + fleet.string() + " " + tree.string()).c_str()), 0);
  ::setenv("KGPU_FAKE_NVML_FLEET", fleet.c_str(), 1);
  auto nvml = NvmlLibrary::load_file(std::string(KGPU_FAKE_NVML_DIR) + "/libnvidia-ml.so.1");
  EXPECT_TRUE(nvml.ok()) << nvml.error().message;
  if (!nvml.ok()) return {};
  NvidiaDiscoveryOptions options;
  options.sysfs_root = (tree / "sys").string();
  options.proc_root = (tree / "proc").string();
  auto inv = discover_nvidia(**nvml, options);
  fs::remove_all(tree);
  EXPECT_TRUE(inv.ok()) << inv.error().message;
  return inv.ok() ? *inv : Inventory{};
}

// The picks as GPU indices, to name expectations independently of UUIDs.
std::vector<size_t> pick(const Inventory& inv, const std::vector<size_t>& available, const std::vector<size_t>& must,
                         int size) {
  const Resource r = testing::whole_gpus(inv);
  std::vector<std::string> avail_ids, must_ids;
  for (auto i : available) avail_ids.push_back(r.devices[i].id);
  for (auto i : must) must_ids.push_back(r.devices[i].id);
  static const Config config;
  auto got = preferred_allocation(config, inv, r, avail_ids, must_ids, size);
  EXPECT_TRUE(got.ok()) << got.error().message;
  std::vector<size_t> out;
  if (got.ok())
    for (const auto& id : *got) out.push_back(r.find(id)->gpu);
  return out;
}

std::vector<size_t> all(const Inventory& inv) {
  std::vector<size_t> out;
  for (size_t i = 0; i < inv.gpus.size(); ++i) out.push_back(i);
  return out;
}

TEST(FleetAllocation, DgxA100) {
  const auto inv = discover_fleet("dgx-a100");
  ASSERT_EQ(inv.gpus.size(), 8u);
  ASSERT_TRUE(inv.topology.nvswitch);
  testing::exhaustive(inv);
  EXPECT_THAT(pick(inv, all(inv), {}, 2), ElementsAre(0, 1));       // a shared PCIe switch complex
  EXPECT_THAT(pick(inv, all(inv), {}, 4), ElementsAre(0, 1, 2, 3));  // one socket
  EXPECT_THAT(pick(inv, all(inv), {5}, 2), ElementsAre(5, 4));
}

TEST(FleetAllocation, HgxH100) {
  const auto inv = discover_fleet("hgx-h100");
  ASSERT_EQ(inv.gpus.size(), 8u);
  testing::exhaustive(inv);
  EXPECT_THAT(pick(inv, all(inv), {}, 4), ElementsAre(0, 1, 2, 3));
  EXPECT_THAT(pick(inv, all(inv), {6}, 2), ElementsAre(6, 4));  // same NUMA node as GPU 6
}

TEST(FleetAllocation, PcieL4x4Pairs) {
  const auto inv = discover_fleet("pcie-l4x4-pairs");
  ASSERT_EQ(inv.gpus.size(), 4u);
  testing::exhaustive(inv);
  EXPECT_THAT(pick(inv, all(inv), {2}, 2), ElementsAre(2, 3));  // the NVLink bridge
  EXPECT_THAT(pick(inv, {0, 2, 3}, {}, 1), ElementsAre(0));     // keep the bridged pair free
}

TEST(FleetAllocation, PcieT4x2) {
  const auto inv = discover_fleet("pcie-t4x2");
  ASSERT_EQ(inv.gpus.size(), 2u);
  testing::exhaustive(inv);
  EXPECT_THAT(pick(inv, all(inv), {1}, 1), ElementsAre(1));
}

TEST(FleetAllocation, Hgx16AgainstBruteForce) {
  const auto inv = discover_fleet("hgx-16");
  ASSERT_EQ(inv.gpus.size(), 16u);
  EXPECT_THAT(pick(inv, all(inv), {}, 8), ElementsAre(0, 1, 2, 3, 4, 5, 6, 7));
  std::mt19937 rng(16);
  for (int trial = 0; trial < 12; ++trial) {
    const uint64_t avail = (rng() & 0xffff) | 0x0101;
    const uint64_t must = trial % 3 == 0 ? 0x0100 : 0;
    for (int size : {1, 2, 3, 4, 6}) {
      if (size > std::popcount(avail) || size < std::popcount(must)) continue;
      testing::expect_optimal(inv, avail, must, size);
      ASSERT_FALSE(::testing::Test::HasFatalFailure());
    }
  }
}

}  // namespace
}  // namespace kgpu
