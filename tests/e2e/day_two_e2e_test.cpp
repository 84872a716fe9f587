// End to end: an operator's day two (issue 30). /readyz says why it is not ready while an MPS
// resource waits for its control daemon, `kgpu devices --live` says "withheld" for it, shows the
// cause of each Unhealthy device (read from the plugin's /metrics) and fails when the plugin is
// not there at all.
#include <gtest/gtest.h>
#include <httplib.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <sstream>

#include "e2e/sim_fixture.h"
#include "fake-nvml/fake_nvml_control.h"

namespace kgpu::test {
namespace {

const std::string kGpu = "nvidia.com/gpu";

class DayTwoE2E : public SimE2E {
 protected:
  // The metrics port the plugin logged, 0 while it has not yet.
  static int metrics_port(const ChildProcess& plugin) {
    static const std::regex line(R"(metrics: serving .* on 127\.0\.0\.1:(\d+))");
    std::smatch m;
    std::string log = plugin.stderr_text();
    return std::regex_search(log, m, line) ? std::stoi(m[1]) : 0;
  }
  static std::string get(int port, const std::string& path, int* status) {
    httplib::Client client("127.0.0.1", port);
    auto res = client.Get(path);
    *status = res ? res->status : -1;
    return res ? res->body : "";
  }
  // kgpu serving with a valid config file (its path in `config`), then `bad` swapped in as a
  // ConfigMap update swaps it; returns once the plugin has logged `seen` about it.
  std::unique_ptr<ChildProcess> start_then_swap_in(const std::string& bad, const std::string& seen, std::string& config) {
    config = work.write("config.yaml", "version: v1\n");
    PluginOptions options;
    options.config_file = config;
    auto plugin = start(options);
    EXPECT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
    std::filesystem::rename(work.write("bad.yaml", bad), config);
    EXPECT_TRUE(wait_until([&] { return plugin->stderr_text().find(seen) != std::string::npos; }, 20s))
        << diagnostics(*plugin);
    return plugin;
  }
  // Runs `kgpu devices --live ARGS...` on the same fake node; returns its exit code.
  std::optional<int> devices_live(std::vector<std::string> args, std::string* out, std::string* err,
                                  const std::string& name = "devices") {
    ProcessOptions p;
    p.argv = {kgpu_binary(), "devices", "--live", "--kubelet-socket", plugin_dir + "/kubelet.sock"};
    p.argv.insert(p.argv.end(), args.begin(), args.end());
    p.env = fake_nvml_env(make_fake_node("dgx-a100.yaml", work.file(name + "-node")));
    ChildProcess cli(p, work.path(), name);
    auto rc = cli.wait_exit(30s);
    *out = cli.stdout_text();
    *err = cli.stderr_text();
    return rc;
  }
};

TEST_F(DayTwoE2E, ReadyzAndDevicesLiveSayAnMpsResourceIsWithheld) {
  const std::string mps_root = work.file("mps");
  const std::string config = work.write("mps.yaml", "version: v1\nflags:\n  mpsRoot: " + mps_root + R"(
sharing:
  mps:
    resources:
    - name: nvidia.com/gpu
      replicas: 4
)");
  PluginOptions options;
  options.config_file = config;
  options.extra_args = {"--metrics-addr", "127.0.0.1:0"};
  auto plugin = start(options);
  int port = 0;
  ASSERT_TRUE(wait_until([&] { return (port = metrics_port(*plugin)) > 0; }, 20s)) << diagnostics(*plugin);
  int status = 0;
  std::string body;
  // Withheld from the first plan on: once planned, the answer names the resource and why.
  ASSERT_TRUE(wait_until(
      [&] {
        body = get(port, "/readyz", &status);
        return body.find("withheld") != std::string::npos;
      },
      20s))
      << body << diagnostics(*plugin);
  EXPECT_EQ(status, 503);
  EXPECT_NE(body.find("nvidia.com/gpu is withheld: waiting for the MPS control daemon"), std::string::npos) << body;
  EXPECT_NE(get(port, "/metrics", &status).find("kgpu_resource_withheld{resource=\"nvidia.com/gpu\""),
            std::string::npos);

  std::string out, err;
  EXPECT_EQ(devices_live({"--config-file", config}, &out, &err), 0) << err << out;
  EXPECT_NE(out.find("live: nvidia.com/gpu is withheld: waiting for the MPS control daemon"), std::string::npos)
      << out;
  EXPECT_EQ(out.find("not being served"), std::string::npos) << "no raw socket error for a withheld resource\n" << out;
  // Issue 41: not "32 devices (32 healthy)": none is advertised.
  EXPECT_NE(out.find("nvidia.com/gpu: 32 devices (withheld, none advertised: waiting for the MPS control daemon"),
            std::string::npos)
      << out;
  EXPECT_EQ(out.find("32 healthy"), std::string::npos) << out;
  EXPECT_EQ(out.find("  Healthy\n"), std::string::npos) << out;
}

TEST_F(DayTwoE2E, DevicesLiveFailsWhenThePluginIsNotRunning) {
  std::string out, err;
  EXPECT_EQ(devices_live({}, &out, &err), 1) << err << out;
  EXPECT_NE(err.find("cannot reach the running plugin for 1 resource(s)"), std::string::npos) << err;
  EXPECT_NE(out.find("live: nvidia.com/gpu is not being served"), std::string::npos) << out;
}

TEST_F(DayTwoE2E, DevicesLiveShowsTheCauseOfAnUnhealthyDevice) {
  fake_nvml::Control control(work.file("nvml.control"));
  PluginOptions options;
  options.env["KGPU_FAKE_NVML_CONTROL"] = control.path();
  options.extra_args = {"--metrics-addr", "127.0.0.1:0"};
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  int port = 0;
  ASSERT_TRUE(wait_until([&] { return (port = metrics_port(*plugin)) > 0; }, 20s)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("health: watching") != std::string::npos; }, 20s));
  auto ids = sim->snapshot().find(kGpu)->device_ids();
  ASSERT_TRUE(control.inject_xid(ids[2], 79));
  ASSERT_TRUE(wait_health(kGpu, ids[2], "Unhealthy")) << diagnostics(*plugin);
  // The metrics observer runs after the kubelet's stream is pushed: wait for the series.
  int status = 0;
  ASSERT_TRUE(wait_until([&] { return get(port, "/metrics", &status).find("kgpu_device_unhealthy{") != std::string::npos; },
                         20s));

  std::string out, err;
  const std::string addr = "127.0.0.1:" + std::to_string(port);
  EXPECT_EQ(devices_live({"--metrics-addr", addr}, &out, &err), 0) << err << out;
  EXPECT_NE(out.find(ids[2] + "  Unhealthy  cause: XID 79 (GPU has fallen off the bus)"), std::string::npos) << out;
  EXPECT_NE(out.find("UNHEALTHY: XID 79 (GPU has fallen off the bus)"), std::string::npos) << "the GPU line too\n" << out;
  EXPECT_NE(out.find(ids[1] + "  Healthy\n"), std::string::npos) << "no cause for a healthy device\n" << out;

  EXPECT_EQ(devices_live({"--metrics-addr", addr, "-o", "json"}, &out, &err, "devices-json"), 0) << err << out;
  EXPECT_NE(out.find("\"cause\": \"XID 79"), std::string::npos) << out;
}

// Issue 41, item 7: without --metrics-addr (the chart's default) --live cannot read causes, and
// says so with where to find them instead of a bare "Unhealthy".
TEST_F(DayTwoE2E, DevicesLiveWithoutMetricsSaysWhereTheCauseIs) {
  fake_nvml::Control control(work.file("nvml.control"));
  PluginOptions options;
  options.env["KGPU_FAKE_NVML_CONTROL"] = control.path();
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("health: watching") != std::string::npos; }, 20s));
  auto ids = sim->snapshot().find(kGpu)->device_ids();
  ASSERT_TRUE(control.inject_xid(ids[3], 79));
  ASSERT_TRUE(wait_health(kGpu, ids[3], "Unhealthy")) << diagnostics(*plugin);
  std::string out, err;
  EXPECT_EQ(devices_live({}, &out, &err), 0) << err << out;
  EXPECT_NE(out.find("UNHEALTHY: not known here (no --metrics-addr: see the hint below)"), std::string::npos) << out;
  EXPECT_NE(out.find("problem: live: the causes of Unhealthy devices are read from the running plugin's /metrics, "
                     "and no --metrics-addr is given"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("metrics.enabled: true"), std::string::npos) << out;
}

// Issue 41, item 7: an invalid file on disk does not hide the live view: the plugin's sockets are
// read and listed, saying the file is invalid (exit 1: it needs fixing).
TEST_F(DayTwoE2E, DevicesLiveWithAnInvalidFileOnDiskStillShowsThePlugin) {
  std::string config;
  auto plugin = start_then_swap_in("version: v1\nflags:\n  migStrategy: mixd\n", "keeping the current plan", config);
  ASSERT_FALSE(HasFailure());
  std::string out, err;
  EXPECT_EQ(devices_live({"--config-file", config}, &out, &err), 1) << err << out;
  EXPECT_NE(err.find("invalid configuration:"), std::string::npos) << err;
  EXPECT_NE(err.find("unknown MIG strategy \"mixd\""), std::string::npos) << err;
  EXPECT_NE(out.find("The config file on disk is invalid (above); the running plugin keeps serving its last valid one."),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("kgpu-nvidia.com-gpu.sock: 8 devices (8 healthy)"), std::string::npos) << out;
}

// Issue 30, item 7: a failed reload logs the hints `config validate` gives, one record per line.
TEST_F(DayTwoE2E, AFailedReloadLogsTheDidYouMeanHints) {
  std::string config;
  auto plugin = start_then_swap_in("version: v1\nflags:\n  migStrategy: mixd\n  mpsroot: /x\n", "did you mean", config);
  ASSERT_FALSE(HasFailure());
  const std::string log = plugin->stderr_text();
  EXPECT_NE(log.find("reload: the new configuration is invalid; keeping the current plan:\n"), std::string::npos) << log;
  EXPECT_NE(log.find("reload: " + config + ":3:16: error: unknown MIG strategy \"mixd\""), std::string::npos) << log;
  EXPECT_NE(log.find("reload: " + config + ":4:3: warning: unknown key \"mpsroot\" in flags; did you mean \"mpsRoot\"?"),
            std::string::npos)
      << log;
  // Issue 41: the file's warning is logged as a warning, its error as an error.
  EXPECT_NE(log.find("warning reload: " + config + ":4:3: warning: unknown key"), std::string::npos) << log;
  EXPECT_NE(log.find("error reload: " + config + ":3:16: error: unknown MIG strategy"), std::string::npos) << log;
}

// Issue 41, item 7: a reload logs what changed, not every setting again.
TEST_F(DayTwoE2E, AReloadLogsTheChangeOnly) {
  const std::string config = work.write("config.yaml", "version: v1\nflags:\n  failOnInitError: false\n");
  PluginOptions options;
  options.config_file = config;
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  ASSERT_NE(plugin->stderr_text().find("config (start): flags.failOnInitError = false"), std::string::npos)
      << diagnostics(*plugin);
  const std::string next = work.write("next.yaml", "version: v1\nflags:\n  migStrategy: single\n");
  std::filesystem::rename(next, config);
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("reload: configuration applied") != std::string::npos; },
                         20s))
      << diagnostics(*plugin);
  const std::string log = plugin->stderr_text();
  EXPECT_NE(log.find("config (reload): flags.migStrategy = single (file) (was: default)"), std::string::npos) << log;
  EXPECT_NE(log.find("config (reload): flags.failOnInitError back to its default (was: false (file))"),
            std::string::npos)
      << log;
  // The config file's name did not change: not repeated.
  EXPECT_EQ(log.find("config (reload): configFile"), std::string::npos) << log;
}

// Issue 30, item 7: JSON logs carry the fields a pipeline filters on, and no empty records.
TEST_F(DayTwoE2E, JsonLogsCarryGpuXidAndResourceFields) {
  fake_nvml::Control control(work.file("nvml.control"));
  PluginOptions options;
  options.env["KGPU_FAKE_NVML_CONTROL"] = control.path();
  options.env["KGPU_LOG_FORMAT"] = "json";
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("health: watching") != std::string::npos; }, 20s));
  auto ids = sim->snapshot().find(kGpu)->device_ids();
  ASSERT_TRUE(control.inject_xid(ids[5], 79));
  ASSERT_TRUE(wait_health(kGpu, ids[5], "Unhealthy")) << diagnostics(*plugin);
  const std::string fields = ",\"gpu\":\"" + ids[5] + "\",\"uuid\":\"" + ids[5] + "\",\"xid\":79";
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find(fields) != std::string::npos; }, 20s))
      << diagnostics(*plugin);
  std::istringstream lines(plugin->stderr_text());
  size_t records = 0;
  for (std::string line; std::getline(lines, line); ++records) {
    EXPECT_TRUE(line.starts_with("{\"time\":\"") && line.ends_with("}")) << line;
    EXPECT_EQ(line.find("\"msg\":\"\""), std::string::npos) << "an empty record: " << line;
  }
  EXPECT_GT(records, 3u);
  EXPECT_NE(plugin->stderr_text().find("\"resource\":\"nvidia.com/gpu\""), std::string::npos) << diagnostics(*plugin);
}

// Issue 30, item 11: a --kubelet-socket whose folder does not exist stops the start; the folder is
// not created behind the operator's back (the kubelet would never look there).
TEST_F(DayTwoE2E, AKubeletSocketInAMissingFolderIsAnError) {
  PluginOptions options;
  options.plugin_dir = work.file("no-such-folder");
  auto plugin = start_plugin(options, work.path());
  EXPECT_EQ(plugin->wait_exit(20s), 1) << diagnostics(*plugin);
  EXPECT_NE(plugin->stderr_text().find("the device-plugin folder " + options.plugin_dir +
                                       " (the folder of --kubelet-socket) does not exist; kgpu does not create it"),
            std::string::npos)
      << diagnostics(*plugin);
  EXPECT_FALSE(path_exists(options.plugin_dir));
}

// Issue 30, item 10: the demo takes its fleet from KGPU_FAKE_NVML_FLEET as the plugin does, and
// says which flag and variable to use when there is none.
TEST(DemoDayTwoE2E, TheFleetComesFromKgpuFakeNvmlFleetAndAMissingOneNamesBoth) {
  TempDir work{"kgpu-demo2"};
  const std::string fleet = work.write("my-fleet.yaml", read_file(fleet_path("dgx-a100.yaml")));
  ProcessOptions p;
  p.argv = {kgpu_binary(), "demo"};
  p.env = {{"KGPU_FAKE_NVML_DIR", fake_nvml_dir()}, {"KGPU_FAKE_NVML_FLEET", fleet}};
  p.unset_env = {"KGPU_DEMO_FLEET"};
  ChildProcess demo(p, work.path(), "demo");
  EXPECT_EQ(demo.wait_exit(60s), 0) << demo.stdout_text() << demo.stderr_text();
  EXPECT_NE(demo.stdout_text().find("  fleet          " + fleet + "\n"), std::string::npos) << demo.stdout_text();

  p.env["KGPU_FAKE_NVML_FLEET"] = work.file("missing.yaml");
  ChildProcess missing(p, work.path(), "demo-missing");
  EXPECT_EQ(missing.wait_exit(30s), 1) << missing.stderr_text();
  EXPECT_NE(missing.stderr_text().find("demo: no fleet file at " + work.file("missing.yaml") +
                                       "; pass --fleet FILE or set KGPU_FAKE_NVML_FLEET=FILE"),
            std::string::npos)
      << missing.stderr_text();
}

// Issue 41, item 7: a release unpacked into one folder (kgpu next to the simulated
// libnvidia-ml.so.1) runs the demo without KGPU_FAKE_NVML_DIR.
TEST(DemoDayTwoE2E, TheDemoFindsTheLibraryNextToTheBinary) {
  TempDir work{"kgpu-demo3"};
  const std::string release = work.file("release");
  std::filesystem::create_directories(release);
  std::filesystem::copy_file(kgpu_binary(), release + "/kgpu");
  std::filesystem::copy_file(fake_nvml_dir() + "/libnvidia-ml.so.1", release + "/libnvidia-ml.so.1");
  ProcessOptions p;
  p.argv = {release + "/kgpu", "demo"};
  p.env = {{"KGPU_FAKE_NVML_FLEET", fleet_path("dgx-a100.yaml")}};
  p.unset_env = {"KGPU_FAKE_NVML_DIR", "KGPU_DEMO_FLEET"};
  ChildProcess demo(p, work.path(), "demo");
  EXPECT_EQ(demo.wait_exit(60s), 0) << demo.stdout_text() << demo.stderr_text();
  EXPECT_NE(demo.stdout_text().find("  fake NVML      " + release + "/libnvidia-ml.so.1"), std::string::npos)
      << demo.stdout_text();
}

// True when a process's command line mentions `text`.
bool any_process_mentions(const std::string& text) {
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    std::string cmdline = read_file(e.path().string() + "/cmdline");
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline.find(text) != std::string::npos && cmdline.find("any_process_mentions") == std::string::npos)
      return true;
  }
  return false;
}

// Issue 30, item 10: `kgpu demo | head -4` leaves no plugin and no temp folder behind.
TEST(DemoDayTwoE2E, DemoIntoHeadLeavesNothingBehind) {
  TempDir work{"kgpu-demo3"};
  ProcessOptions p;
  p.argv = {"/bin/sh", "-c", "\"$0\" demo | head -4", kgpu_binary()};
  p.env = {{"KGPU_FAKE_NVML_DIR", fake_nvml_dir()}, {"KGPU_FAKE_NVML_FLEET", fleet_path("dgx-a100.yaml")}};
  ChildProcess pipeline(p, work.path(), "pipeline");
  ASSERT_EQ(pipeline.wait_exit(60s), 0) << pipeline.stderr_text();
  const std::string out = pipeline.stdout_text();
  const auto at = out.find("  plugin dir     ");
  ASSERT_NE(at, std::string::npos) << out;
  const std::string plugin_dir = out.substr(at + 17, out.find('\n', at) - at - 17);
  const std::string tmp = std::filesystem::path(plugin_dir).parent_path().string();
  ASSERT_TRUE(tmp.starts_with("/tmp/kgpu-demo-")) << out;
  EXPECT_TRUE(wait_until([&] { return !path_exists(tmp); }, 30s)) << "the temp folder stays: " << tmp;
  EXPECT_TRUE(wait_until([&] { return !any_process_mentions(plugin_dir); }, 30s)) << "a plugin outlives the demo";
}

}  // namespace
}  // namespace kgpu::test
