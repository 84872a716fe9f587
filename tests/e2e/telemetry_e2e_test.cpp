// End to end: GPU telemetry on /metrics of the real `kgpu plugin`, under DCGM exporter's names,
// read from the simulated NVML at scrape time: every default series for every GPU, readings that
// follow the control channel, the last XID with DCGM's labels, `promtool check metrics` on the
// whole page (when Debian's prometheus package is installed), and the environment switch.
#include <gtest/gtest.h>
#include <httplib.h>

#include <sys/wait.h>

#include <cstdio>
#include <sstream>
#include <regex>

#include "e2e/sim_fixture.h"
#include "fake-nvml/fake_nvml_control.h"

namespace kgpu::test {
namespace {

const std::string kGpu = "nvidia.com/gpu";
const std::string kGpu3 = "GPU-a3b4c5d6-e7f8-4a9b-8c0d-3e4f5a6b7c43";  // dgx-a100.yaml, index 3

class TelemetryE2E : public SimE2E {
 protected:
  static int metrics_port(const ChildProcess& plugin) {
    static const std::regex line(R"(metrics: serving .* on 127\.0\.0\.1:(\d+))");
    std::smatch m;
    std::string log = plugin.stderr_text();
    return std::regex_search(log, m, line) ? std::stoi(m[1]) : 0;
  }
  static std::string scrape(int port) {
    httplib::Client client("127.0.0.1", port);
    auto res = client.Get("/metrics");
    return res && res->status == 200 ? res->body : "";
  }
  static size_t samples(const std::string& body, const std::string& metric) {
    size_t n = 0;
    const std::string needle = "\n" + metric + "{";
    for (size_t pos = body.find(needle); pos != std::string::npos; pos = body.find(needle, pos + 1)) ++n;
    return n;
  }
  // The value of the sample of `metric` whose labels contain `label_part`; -1 when absent.
  static double value(const std::string& body, const std::string& metric, const std::string& label_part) {
    const std::string needle = "\n" + metric + "{";
    for (size_t pos = body.find(needle); pos != std::string::npos; pos = body.find(needle, pos + 1)) {
      const size_t end = body.find('\n', pos + 1);
      const std::string line = body.substr(pos + 1, end - pos - 1);
      if (line.find(label_part) == std::string::npos) continue;
      return std::stod(line.substr(line.rfind(' ') + 1));
    }
    return -1;
  }

  // Starts the plugin with metrics on and waits for its port and the first plan.
  std::unique_ptr<ChildProcess> start_with_metrics(PluginOptions options, int& port) {
    options.extra_args = {"--metrics-addr", "127.0.0.1:0"};
    auto plugin = start(options);
    EXPECT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
    EXPECT_TRUE(wait_until([&] { return (port = metrics_port(*plugin)) > 0; }, 20s)) << diagnostics(*plugin);
    return plugin;
  }
};

TEST_F(TelemetryE2E, ScrapeCarriesDcgmSeriesForEveryGpuAndFollowsTheDevice) {
  fake_nvml::Control control(work.file("nvml.control"));
  PluginOptions options;
  options.env["KGPU_FAKE_NVML_CONTROL"] = control.path();
  options.env["NODE_NAME"] = "gpu-node-7";
  int port = 0;
  auto plugin = start_with_metrics(options, port);
  ASSERT_GT(port, 0);
  std::string body;
  ASSERT_TRUE(wait_until([&] { return samples(body = scrape(port), "DCGM_FI_DEV_GPU_UTIL") == 8; }, 20s))
      << body << diagnostics(*plugin);

  for (const char* metric :
       {"DCGM_FI_DEV_SM_CLOCK", "DCGM_FI_DEV_MEM_CLOCK", "DCGM_FI_DEV_MEMORY_TEMP", "DCGM_FI_DEV_GPU_TEMP",
        "DCGM_FI_DEV_POWER_USAGE", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER",
        "DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_MEM_COPY_UTIL", "DCGM_FI_DEV_ENC_UTIL", "DCGM_FI_DEV_DEC_UTIL",
        "DCGM_FI_DEV_FB_FREE", "DCGM_FI_DEV_FB_USED", "DCGM_FI_DEV_FB_RESERVED", "DCGM_FI_DEV_ECC_SBE_VOL_TOTAL",
        "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "DCGM_FI_DEV_ECC_DBE_AGG_TOTAL",
        "DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS",
        "DCGM_FI_DEV_ROW_REMAP_FAILURE"})
    EXPECT_EQ(samples(body, metric), 8u) << metric;
  EXPECT_NE(body.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"3\",UUID=\"" + kGpu3 +
                      "\",pci_bus_id=\"00000000:4E:00.0\",device=\"nvidia3\",modelName=\"NVIDIA A100-SXM4-40GB\","
                      "Hostname=\"gpu-node-7\",DCGM_FI_DRIVER_VERSION=\"550.54.15\"} "),
            std::string::npos)
      << body;
  EXPECT_EQ(samples(body, "DCGM_FI_DEV_XID_ERRORS"), 0u) << "no XID seen yet";
  // kgpu's own families are still there, before the GPU series.
  EXPECT_LT(body.find("# TYPE kgpu_build_info gauge"), body.find("# TYPE DCGM_FI_DEV_SM_CLOCK gauge"));

  // Readings are taken at scrape time: a change on the device shows in the next scrape.
  ASSERT_TRUE(control.send("set " + kGpu3 + " gpu_util 88"));
  ASSERT_TRUE(control.send("set " + kGpu3 + " ecc_dbe_volatile 2"));
  ASSERT_TRUE(control.sync(5s));
  body = scrape(port);
  EXPECT_EQ(value(body, "DCGM_FI_DEV_GPU_UTIL", "gpu=\"3\""), 88) << body;
  EXPECT_EQ(value(body, "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "gpu=\"3\""), 2) << body;

  // The health monitor's last XID becomes DCGM's XID gauge for that GPU.
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("health: watching") != std::string::npos; }, 20s));
  ASSERT_TRUE(control.inject_xid(kGpu3, 79));
  ASSERT_TRUE(wait_until([&] { return value(body = scrape(port), "DCGM_FI_DEV_XID_ERRORS", "gpu=\"3\"") == 79; }, 20s))
      << body;
  EXPECT_NE(body.find("err_code=\"79\",err_msg=\"GPU has fallen off the bus\"} 79"), std::string::npos) << body;

  // A call failing on one GPU costs that GPU that series only.
  ASSERT_TRUE(control.fail_call(kGpu3, "nvmlDeviceGetClockInfo", 999 /* NVML_ERROR_UNKNOWN */));
  ASSERT_TRUE(control.sync(5s));
  body = scrape(port);
  EXPECT_EQ(samples(body, "DCGM_FI_DEV_SM_CLOCK"), 7u) << body;
  EXPECT_EQ(value(body, "DCGM_FI_DEV_SM_CLOCK", "gpu=\"3\""), -1) << body;
  EXPECT_EQ(samples(body, "DCGM_FI_DEV_GPU_TEMP"), 8u) << body;

  // Debian's promtool, when installed, parses the whole page without error. Its only remarks
  // must be the naming lints DCGM's own names draw (kept on purpose, for dashboard compatibility).
  if (path_exists("/usr/bin/promtool")) {
    const std::string file = work.write("metrics.txt", body);
    const std::string cmd = "/usr/bin/promtool check metrics < '" + file + "' > '" + file + ".out' 2>&1";
    const int status = std::system(cmd.c_str());
    const std::string report = read_file(file + ".out");
    ASSERT_TRUE(WIFEXITED(status)) << report;
    EXPECT_TRUE(WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == 3) << "3 = lint remarks only\n" << report;
    std::istringstream lines(report);
    for (std::string line; std::getline(lines, line);) {
      const bool naming_lint = line.find("should be written in 'snake_case' not 'camelCase'") != std::string::npos ||
                               line.find("counter metrics should have \"_total\" suffix") != std::string::npos ||
                               line.find("metric name should not include type 'counter'") != std::string::npos;
      EXPECT_TRUE(naming_lint) << "promtool: " << line;
    }
  }
}

// Per-pod attribution through the kubelet's PodResources API (the simulator serves it): the series
// of a GPU a container holds carry its container, namespace and pod; they leave with the pod.
TEST_F(TelemetryE2E, SeriesOfAHeldGpuCarryThePodThatHoldsIt) {
  int port = 0;
  auto plugin = start_with_metrics({}, port);
  ASSERT_GT(port, 0);
  ASSERT_TRUE(sim->run_pod("ml", "trainer-0", kGpu, {kGpu3}).ok());
  const std::string held = "gpu=\"3\",UUID=\"" + kGpu3 + "\"";
  std::string body;
  ASSERT_TRUE(wait_until(
      [&] {
        body = scrape(port);
        return value(body, "DCGM_FI_DEV_GPU_UTIL", "container=\"main\",namespace=\"ml\",pod=\"trainer-0\"") >= 0;
      },
      20s))
      << body << diagnostics(*plugin);
  // Only the held GPU is attributed, on every one of its series; the others carry no pod labels.
  EXPECT_EQ(samples(body, "DCGM_FI_DEV_GPU_UTIL"), 8u) << body;
  EXPECT_NE(body.find("DCGM_FI_DEV_FB_USED{" + held), std::string::npos) << body;
  size_t attributed = 0;
  for (size_t pos = body.find("pod=\"trainer-0\""); pos != std::string::npos; pos = body.find("pod=\"trainer-0\"", pos + 1)) {
    const size_t line_start = body.rfind('\n', pos) + 1;
    EXPECT_NE(body.substr(line_start, pos - line_start).find(held), std::string::npos)
        << body.substr(line_start, body.find('\n', pos) - line_start);
    ++attributed;
  }
  EXPECT_GE(attributed, 20u) << body;

  sim->delete_pod("ml", "trainer-0");
  ASSERT_TRUE(wait_until([&] { return (body = scrape(port)).find("pod=\"trainer-0\"") == std::string::npos; }, 20s))
      << body;
  EXPECT_EQ(samples(body, "DCGM_FI_DEV_GPU_UTIL"), 8u) << body;
}

// A replica of a time-sliced GPU is attributed to the GPU it runs on.
TEST_F(TelemetryE2E, ReplicaIsAttributedToItsGpu) {
  PluginOptions options;
  options.config_file = work.write("ts.yaml",
                                   "version: v1\nsharing:\n  timeSlicing:\n    resources:\n"
                                   "    - name: nvidia.com/gpu\n      replicas: 2\n");
  options.extra_args = {"--metrics-addr", "127.0.0.1:0"};
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 16)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return metrics_port(*plugin) > 0; }, 20s)) << diagnostics(*plugin);
  const int port = metrics_port(*plugin);
  ASSERT_TRUE(sim->run_pod("ml", "infer-1", kGpu, {kGpu3 + "::1"}).ok());
  std::string body;
  ASSERT_TRUE(wait_until(
      [&] {
        body = scrape(port);
        return value(body, "DCGM_FI_DEV_GPU_UTIL", "gpu=\"3\",UUID=\"" + kGpu3) >= 0 &&
               body.find("pod=\"infer-1\"") != std::string::npos;
      },
      20s))
      << body << diagnostics(*plugin);
  const size_t at = body.find("DCGM_FI_DEV_GPU_UTIL{gpu=\"3\"");
  ASSERT_NE(at, std::string::npos) << body;
  const std::string line = body.substr(at, body.find('\n', at) - at);
  EXPECT_NE(line.find("namespace=\"ml\",pod=\"infer-1\""), std::string::npos) << line;
}

TEST_F(TelemetryE2E, SwitchedOffByEnvironmentLeavesOnlyKgpuFamilies) {
  PluginOptions options;
  options.env["KGPU_GPU_TELEMETRY"] = "false";
  int port = 0;
  auto plugin = start_with_metrics(options, port);
  ASSERT_GT(port, 0);
  std::string body;
  ASSERT_TRUE(wait_until([&] { return (body = scrape(port)).find("kgpu_build_info") != std::string::npos; }, 20s));
  EXPECT_EQ(body.find("DCGM_FI_"), std::string::npos) << body;
}

}  // namespace
}  // namespace kgpu::test
