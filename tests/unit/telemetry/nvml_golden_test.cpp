// The real reader against the simulated NVML: golden exposition per fleet (8 GPUs, MIG mixed,
// shared replicas held by pods), failures that cost only their own series, and readings from the
// fleet file and the control channel. Golden files live in golden/; KGPU_UPDATE_GOLDEN=1 rewrites
// them (review the diff: they are the expected output, never regenerated blindly).
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "fake-nvml/fake_nvml_control.h"
#include "nvml/discovery.h"
#include "telemetry/collector.h"
#include "telemetry/nvml_reader.h"
#include "unit/nvml/fake_fleet.h"

namespace kgpu::telemetry {
namespace {

using kgpu::testing::FakeNode;
using kgpu::testing::fleet_path;

std::string golden_path(const std::string& name) {
  return std::string(KGPU_SOURCE_DIR) + "/tests/unit/telemetry/golden/" + name;
}

void expect_golden(const std::string& name, const std::string& text) {
  if (std::getenv("KGPU_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden_path(name)) << text;
    return;
  }
  std::ifstream in(golden_path(name));
  ASSERT_TRUE(in) << "missing golden file " << golden_path(name);
  std::stringstream want;
  want << in.rdbuf();
  EXPECT_EQ(text, want.str()) << "exposition differs from " << golden_path(name);
}

// A fake node, its discovered inventory and a collector reading it.
struct Scraper {
  explicit Scraper(const std::string& fleet, CollectorOptions options = {"node-1", nullptr, nullptr},
                   const std::string& control = "")
      : node(fleet, control) {
    EXPECT_TRUE(node.ready()) << node.problem();
    auto inv = discover_nvidia(node.nvml(), node.options());
    EXPECT_TRUE(inv) << (inv ? "" : inv.error().message);
    if (inv) inventory = *inv;
    collector = std::make_unique<Collector>(std::make_unique<NvmlReader>(node.shared()), std::move(options));
    collector->set_inventory(inventory);
  }
  FakeNode node;
  Inventory inventory;
  std::unique_ptr<Collector> collector;
};

TEST(TelemetryGolden, EightGpuDgx) {
  Scraper s(fleet_path("dgx-a100.yaml"));
  expect_golden("dgx-a100.prom", s.collector->render());
}

TEST(TelemetryGolden, MigMixedWithPodsOnGpuInstances) {
  CollectorOptions options{"node-1", nullptr, nullptr};
  // MIG devices handed out by index ("i:j") and by uuid.
  options.pods = [] {
    return Result<std::vector<ContainerDevices>>(std::vector<ContainerDevices>{
        {"infer", "server-0", "triton", "nvidia.com/mig-3g.20gb", {"0:0"}},
        {"infer", "server-1", "triton", "nvidia.com/mig-1g.5gb", {"1:3"}},
        {"batch", "job-7", "worker", "nvidia.com/gpu", {"3"}},
    });
  };
  Scraper s(fleet_path("a100-mig-mixed.yaml"), std::move(options));
  expect_golden("a100-mig-mixed.prom", s.collector->render());
}

TEST(TelemetryGolden, SharedReplicasHeldByTwoPodsAndAnXid) {
  CollectorOptions options{"node-1", nullptr, nullptr};
  options.pods = [] {
    return Result<std::vector<ContainerDevices>>(std::vector<ContainerDevices>{
        {"team-a", "notebook", "jupyter", "nvidia.com/gpu.shared", {"GPU-2330fcf1-562a-44b8-8866-8d77e827062c::0"}},
        {"team-b", "train", "main", "nvidia.com/gpu.shared", {"GPU-2330fcf1-562a-44b8-8866-8d77e827062c::3"}},
    });
  };
  options.xids = [](const std::string& uuid) -> std::optional<uint64_t> {
    if (uuid == "GPU-c1acc990-6424-450a-a36b-f9b3ddcb369d") return 13;
    return std::nullopt;
  };
  Scraper s(fleet_path("pcie-t4x2.yaml"), std::move(options));
  expect_golden("pcie-t4x2-shared.prom", s.collector->render());
}

size_t count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t pos = text.find(needle); pos != std::string::npos; pos = text.find(needle, pos + 1)) ++n;
  return n;
}

TEST(TelemetryNvml, FailingCallLosesOnlyItsSeriesOnThatGpuAndComesBack) {
  kgpu::testing::TempDir dir;
  fake_nvml::Control ctl(dir.path() + "/nvml.control");
  Scraper s(fleet_path("pcie-t4x2.yaml"), {"node-1", nullptr, nullptr}, ctl.path());
  const std::string gpu1 = "GPU-c1acc990-6424-450a-a36b-f9b3ddcb369d";
  ASSERT_EQ(count(s.collector->render(), "DCGM_FI_DEV_POWER_USAGE{"), 2u);

  ASSERT_TRUE(ctl.fail_call(gpu1, "nvmlDeviceGetPowerUsage", NVML_ERROR_UNKNOWN));
  ASSERT_TRUE(ctl.sync(std::chrono::seconds(5)));
  std::string out = s.collector->render();
  EXPECT_EQ(count(out, "DCGM_FI_DEV_POWER_USAGE{"), 1u);
  EXPECT_EQ(count(out, "DCGM_FI_DEV_POWER_USAGE{gpu=\"1\""), 0u);
  EXPECT_EQ(count(out, "DCGM_FI_DEV_GPU_TEMP{"), 2u) << "other series of that GPU stay";

  ASSERT_TRUE(ctl.set_lost(gpu1, true));
  ASSERT_TRUE(ctl.sync(std::chrono::seconds(5)));
  out = s.collector->render();
  EXPECT_EQ(count(out, "gpu=\"1\""), 0u) << "a lost GPU has no series";
  EXPECT_GT(count(out, "gpu=\"0\""), 10u) << "the other GPU keeps all of its";

  ASSERT_TRUE(ctl.set_lost(gpu1, false));
  ASSERT_TRUE(ctl.fail_call(gpu1, "nvmlDeviceGetPowerUsage", 0));
  ASSERT_TRUE(ctl.sync(std::chrono::seconds(5)));
  EXPECT_EQ(count(s.collector->render(), "DCGM_FI_DEV_POWER_USAGE{"), 2u);
}

TEST(TelemetryNvml, ControlChannelSetChangesTheNextScrape) {
  kgpu::testing::TempDir dir;
  fake_nvml::Control ctl(dir.path() + "/nvml.control");
  Scraper s(fleet_path("pcie-t4x2.yaml"), {"node-1", nullptr, nullptr}, ctl.path());
  const std::string gpu0 = "GPU-2330fcf1-562a-44b8-8866-8d77e827062c";
  ASSERT_TRUE(ctl.send("set " + gpu0 + " gpu_util 93"));
  ASSERT_TRUE(ctl.send("set " + gpu0 + " used_mib 2048"));
  ASSERT_TRUE(ctl.send("set " + gpu0 + " remapped_uncorrectable 4"));
  ASSERT_TRUE(ctl.sync(std::chrono::seconds(5)));
  const std::string out = s.collector->render();
  EXPECT_NE(out.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"0\""), std::string::npos);
  EXPECT_NE(out.find("DCGM_FI_DRIVER_VERSION=\"535.161.08\"} 93\n"), std::string::npos) << out;
  EXPECT_NE(out.find("DCGM_FI_DRIVER_VERSION=\"535.161.08\"} 2048\n"), std::string::npos) << out;
  EXPECT_NE(out.find("DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{gpu=\"0\""), std::string::npos);
  EXPECT_NE(out.find("DCGM_FI_DRIVER_VERSION=\"535.161.08\"} 4\n"), std::string::npos) << out;
}

TEST(TelemetryNvml, FleetTelemetrySectionSetsReadings) {
  kgpu::testing::TempDir dir;
  std::ifstream in(fleet_path("pcie-t4x2.yaml"));
  std::stringstream text;
  text << in.rdbuf();
  std::string fleet = text.str();
  const std::string anchor = "  power_limit_mw: 70000\n";
  ASSERT_NE(fleet.find(anchor), std::string::npos);
  fleet.replace(fleet.find(anchor), anchor.size(), anchor + "  telemetry: {gpu_util: 77, ecc_dbe_volatile: 2}\n");
  kgpu::testing::write_file(dir.path() + "/fleet.yaml", fleet);
  Scraper s(dir.path() + "/fleet.yaml");
  const std::string out = s.collector->render();
  EXPECT_EQ(count(out, "DCGM_FI_DRIVER_VERSION=\"535.161.08\"} 77\n"), 2u) << out;
  EXPECT_NE(out.find("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{gpu=\"1\""), std::string::npos);
}

TEST(TelemetryNvml, NvlinkBandwidthIsTheRateBetweenTwoScrapesOnNvlinkGpusOnly) {
  {
    kgpu::testing::TempDir dir;
    fake_nvml::Control ctl(dir.path() + "/nvml.control");
    Scraper s(fleet_path("dgx-a100.yaml"), {"node-1", nullptr, nullptr}, ctl.path());
    EXPECT_EQ(count(s.collector->render(), "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{"), 0u) << "no interval yet";
    ASSERT_TRUE(ctl.send("set GPU-a3b4c5d6-e7f8-4a9b-8c0d-3e4f5a6b7c43 nvlink_tx_kib 50000000"));
    ASSERT_TRUE(ctl.sync(std::chrono::seconds(5)));
    const std::string out = s.collector->render();
    EXPECT_EQ(count(out, "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{"), 8u) << out;
    // GPU 3 moved 50 GB since the first scrape; the others moved nothing.
    std::istringstream lines(out);
    size_t idle = 0;
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{", 0) != 0) continue;
      const double v = std::stod(line.substr(line.rfind(' ') + 1));
      if (line.find("gpu=\"3\"") != std::string::npos) {
        EXPECT_GT(v, 0) << line;
      } else {
        EXPECT_EQ(v, 0) << line;
        ++idle;
      }
    }
    EXPECT_EQ(idle, 7u);
  }  // the fake NVML re-reads its fleet only once every user has shut it down

  Scraper pcie(fleet_path("pcie-t4x2.yaml"));
  pcie.collector->render();
  EXPECT_EQ(count(pcie.collector->render(), "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{"), 0u) << "no NVLink, no series";
}

TEST(TelemetryNvml, DriverWithoutFieldValuesFallsBackToOneCallPerCounter) {
  kgpu::testing::TempDir dir;
  fake_nvml::Control ctl(dir.path() + "/nvml.control");
  Scraper s(fleet_path("pcie-t4x2.yaml"), {"node-1", nullptr, nullptr}, ctl.path());
  // NVML_ERROR_FUNCTION_NOT_FOUND on GPU 0: what a library without the entry point answers.
  ASSERT_TRUE(ctl.fail_call("GPU-2330fcf1-562a-44b8-8866-8d77e827062c", "nvmlDeviceGetFieldValues", 13));
  ASSERT_TRUE(ctl.sync(std::chrono::seconds(5)));
  const std::string out = s.collector->render();
  for (const char* metric : {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER{",
                             "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{", "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS{"})
    EXPECT_EQ(count(out, metric), 2u) << metric << " comes from its own call on GPU 0\n" << out;
  // Memory temperature exists only as a field value: GPU 0 loses just that series.
  EXPECT_EQ(count(out, "DCGM_FI_DEV_MEMORY_TEMP{"), 1u) << out;
  EXPECT_EQ(count(out, "DCGM_FI_DEV_MEMORY_TEMP{gpu=\"1\""), 1u) << out;
}

TEST(TelemetryNvml, ScrapeOfEightGpusMakesABoundedNumberOfCalls) {
  Scraper s(fleet_path("dgx-a100.yaml"));
  s.collector->render();  // the first read also looks up the handles
  s.collector->render();
  // 9 calls per GPU: clocks 2, temperature, power, utilization, encoder, decoder, memory, and one
  // field-values call for memory temperature, energy, PCIe replays, ECC, remapped rows and NVLink.
  // No handle lookups once resolved.
  EXPECT_EQ(s.collector->last_calls(), 8u * 9u);
}

}  // namespace
}  // namespace kgpu::telemetry
