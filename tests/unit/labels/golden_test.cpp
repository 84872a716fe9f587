// Golden label files for every shipped fleet and the interesting sharing / MIG configurations. The
// production path end to end: the fake NVML (loaded with dlopen like the real library), NVIDIA
// discovery, plan(), the label context read from the fleet's fixture tree (machine type, PCI
// classes), node_labels. A fixed timestamp keeps files stable.
// To regenerate after an intended change: KGPU_UPDATE_GOLDEN=1 ./test_labels --gtest_filter='Golden*'
// and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "labels/context.h"
#include "labels/feature_file.h"
#include "labels/labels.h"
#include "labels/sanitize.h"
#include "nvml/discovery.h"
#include "nvml/nvml_library.h"
#include "plan/plan.h"

namespace kgpu {
namespace {

namespace fs = std::filesystem;

struct GoldenCase {
  const char* name;   // golden file stem
  const char* fleet;  // tests/fixtures/fleets/<fleet>.yaml
  void (*configure)(Config&);
};

void none(Config&) {}
void single(Config& c) { c.mig_strategy = MigStrategy::Single; }
void mixed(Config& c) { c.mig_strategy = MigStrategy::Mixed; }
void time_sliced(Config& c) {
  c.time_slicing.resources.push_back({"nvidia.com/gpu", "", 4, {}});
}
void time_sliced_renamed(Config& c) {
  c.time_slicing.rename_by_default = true;
  c.time_slicing.resources.push_back({"nvidia.com/gpu", "", 4, {}});
}
void mps(Config& c) {
  ReplicatedResources r;
  r.resources.push_back({"nvidia.com/gpu", "", 2, {}});
  c.mps = r;
  c.mps_root = "/run/nvidia/mps";
}
void mixed_time_sliced(Config& c) {
  c.mig_strategy = MigStrategy::Mixed;
  c.time_slicing.resources.push_back({"nvidia.com/mig-1g.5gb", "", 2, {}});
}
void no_timestamp(Config& c) { c.gfd_no_timestamp = true; }

const GoldenCase kCases[] = {
    {"dgx-a100", "dgx-a100", none},
    {"dgx-a100-time-slicing", "dgx-a100", time_sliced},
    {"dgx-a100-time-slicing-renamed", "dgx-a100", time_sliced_renamed},
    {"dgx-a100-no-timestamp", "dgx-a100", no_timestamp},
    {"hgx-h100", "hgx-h100", none},
    {"hgx-16", "hgx-16", none},
    {"pcie-l4x4-pairs", "pcie-l4x4-pairs", none},
    {"pcie-t4x2", "pcie-t4x2", none},
    {"pcie-t4x2-mps", "pcie-t4x2", mps},
    {"a100-mig-mixed", "a100-mig-mixed", mixed},
    {"a100-mig-mixed-time-slicing", "a100-mig-mixed", mixed_time_sliced},
    {"a100-mig-mixed-as-single", "a100-mig-mixed", single},
    {"a100-mig-mixed-as-none", "a100-mig-mixed", none},
    {"a100-mig-single", "a100-mig-single", single},
    {"a100-mig-single-as-mixed", "a100-mig-single", mixed},
    {"empty", "empty", none},
};

std::string read_file(const fs::path& p) {
  std::ifstream in(p);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

class GoldenLabels : public ::testing::TestWithParam<GoldenCase> {};

TEST_P(GoldenLabels, MatchesGoldenFile) {
  const GoldenCase& c = GetParam();
  const fs::path fleet = fs::path(KGPU_FIXTURES_DIR) / "fleets" / (std::string(c.fleet) + ".yaml");
  const fs::path golden = fs::path(KGPU_FIXTURES_DIR) / "golden" / "labels" / (std::string(c.name) + ".labels");
  const fs::path tree = fs::temp_directory_path() / ("kgpu-golden-" + std::to_string(::getpid()) + "-" + c.name);
  fs::remove_all(tree);
  const std::string tool = std::string(KGPU_FAKE_NVML_DIR) + "/kgpu-fake-nvml-fixture";
  ASSERT_EQ(std::system((tool + " " + fleet.string() + " " + tree.string()).c_str()), 0) << tool;

  ::setenv("KGPU_FAKE_NVML_FLEET", fleet.c_str(), 1);
  auto nvml = NvmlLibrary::load_file(std::string(KGPU_FAKE_NVML_DIR) + "/libnvidia-ml.so.1");
  ASSERT_TRUE(nvml.ok()) << nvml.error().message;
  NvidiaDiscoveryOptions options;
  options.sysfs_root = (tree / "sys").string();
  options.proc_root = (tree / "proc").string();
  options.dev_root = (tree / "dev").string();
  auto inventory = discover_nvidia(**nvml, options);
  ASSERT_TRUE(inventory.ok()) << inventory.error().message;

  Config config;
  config.sysfs_root = options.sysfs_root;
  config.gfd_machine_type_file = (tree / "sys" / "class" / "dmi" / "id" / "product_name").string();
  c.configure(config);
  const auto plan = kgpu::plan(config, *inventory);
  const auto context = read_label_context(config, *inventory, 1724632719);
  const Labels labels = node_labels(config, *inventory, plan, context);
  fs::remove_all(tree);

  for (const auto& [key, value] : labels) {
    EXPECT_TRUE(labels::is_valid_label_key(key)) << key;
    EXPECT_TRUE(labels::is_valid_label_value(value)) << key << "=" << value;
  }
  const std::string got = format_labels(labels);
  if (std::getenv("KGPU_UPDATE_GOLDEN")) {
    fs::create_directories(golden.parent_path());
    std::ofstream(golden) << got;
    GTEST_SKIP() << "wrote " << golden;
  }
  ASSERT_TRUE(fs::exists(golden)) << golden << " is missing; run with KGPU_UPDATE_GOLDEN=1 and review it";
  EXPECT_EQ(got, read_file(golden)) << "labels differ from " << golden;
}

INSTANTIATE_TEST_SUITE_P(Fleets, GoldenLabels, ::testing::ValuesIn(kCases),
                         [](const auto& case_info) {
                           std::string n = case_info.param.name;
                           for (auto& ch : n)
                             if (ch == '-') ch = '_';
                           return n;
                         });

}  // namespace
}  // namespace kgpu
