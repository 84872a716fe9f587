// End to end: what an operator runs beside the device plugin itself — Prometheus metrics and
// probes, the node-labels file, and configuration reloads (file change and SIGHUP).
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>

#include <fstream>
#include <regex>

#include "e2e/sim_fixture.h"
#include "fake-nvml/fake_nvml_control.h"
#include "support/fake_api_server.h"

namespace kgpu::test {
namespace {

const std::string kGpu = "nvidia.com/gpu";

std::string time_slicing(int replicas) {
  return "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: " +
         std::to_string(replicas) + "\n";
}

// Replaces a file the way editors and ConfigMap updates do: write a new file, rename it over.
void replace_file(const std::string& path, const std::string& content) {
  std::string tmp = path + ".new";
  std::ofstream(tmp) << content;
  std::filesystem::rename(tmp, path);
}

class OperateE2E : public SimE2E {
 protected:
  // The metrics port the plugin logged ("metrics: serving ... on 127.0.0.1:<port>"), 0 if none yet.
  static int metrics_port(const ChildProcess& plugin) {
    static const std::regex line(R"(metrics: serving .* on 127\.0\.0\.1:(\d+))");
    std::smatch m;
    std::string log = plugin.stderr_text();
    return std::regex_search(log, m, line) ? std::stoi(m[1]) : 0;
  }
  static std::string get(int port, const std::string& path, int* status = nullptr) {
    httplib::Client client("127.0.0.1", port);
    auto res = client.Get(path);
    if (status) *status = res ? res->status : -1;
    return res ? res->body : "";
  }
  // The value of one series line, e.g. `kgpu_allocations_total{resource="nvidia.com/gpu"}`; -1 if absent.
  static double series(const std::string& body, const std::string& name) {
    auto at = body.find("\n" + name + " ");
    if (at == std::string::npos) return -1;
    return std::stod(body.substr(at + name.size() + 2));
  }
};

TEST_F(OperateE2E, MetricsShowEveryFamilyAndChangeWithAllocationsAndXids) {
  fake_nvml::Control control(work.file("nvml.control"));
  PluginOptions options;
  options.env["KGPU_FAKE_NVML_CONTROL"] = control.path();
  options.extra_args = {"--metrics-addr", "127.0.0.1:0"};
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  int port = 0;
  ASSERT_TRUE(wait_until([&] { return (port = metrics_port(*plugin)) > 0; }, 20s)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("health: watching") != std::string::npos; }, 20s));

  const std::string res = "{resource=\"nvidia.com/gpu\"}";
  std::string body;
  // The daemon records the registration after the kubelet's Register call returns: wait for it.
  ASSERT_TRUE(wait_until(
      [&] {
        body = get(port, "/metrics");
        return series(body, "kgpu_resource_registered" + res) == 1;
      },
      20s))
      << body;
  for (const char* family :
       {"kgpu_build_info", "kgpu_start_time_seconds", "kgpu_devices", "kgpu_resource_registered",
        "kgpu_allocations_total", "kgpu_allocated_devices_total", "kgpu_allocate_errors_total",
        "kgpu_allocate_duration_seconds", "kgpu_preferred_allocation_duration_seconds",
        "kgpu_kubelet_registrations_total", "kgpu_kubelet_registration_errors_total", "kgpu_health_xid_events_total",
        "kgpu_config_reloads_total"})
    EXPECT_NE(body.find("# TYPE " + std::string(family) + " "), std::string::npos) << family << "\n" << body;
  EXPECT_EQ(series(body, "kgpu_devices{resource=\"nvidia.com/gpu\",health=\"healthy\"}"), 8) << body;
  EXPECT_EQ(series(body, "kgpu_resource_registered" + res), 1) << body;
  EXPECT_EQ(series(body, "kgpu_kubelet_registrations_total" + res), 1) << body;
  double allocations = series(body, "kgpu_allocations_total" + res);
  EXPECT_EQ(allocations, 0) << body;

  auto ids = sim->snapshot().find(kGpu)->device_ids();
  ASSERT_TRUE(sim->allocate(kGpu, {ids[0], ids[1]}).ok());
  ASSERT_FALSE(sim->allocate(kGpu, {"GPU-bogus"}).ok());
  body = get(port, "/metrics");
  EXPECT_EQ(series(body, "kgpu_allocations_total" + res), 1) << body;
  EXPECT_EQ(series(body, "kgpu_allocated_devices_total" + res), 2) << body;
  EXPECT_EQ(series(body, "kgpu_allocate_errors_total" + res), 1) << body;
  EXPECT_EQ(series(body, "kgpu_allocate_duration_seconds_count" + res), 2) << body;

  ASSERT_TRUE(control.inject_xid(ids[4], 79));
  ASSERT_TRUE(wait_healthy(kGpu, 7)) << diagnostics(*plugin);
  // The kubelet's stream is pushed before the metrics observer runs: wait for the gauge too.
  EXPECT_TRUE(wait_until(
      [&] {
        body = get(port, "/metrics");
        return series(body, "kgpu_devices{resource=\"nvidia.com/gpu\",health=\"unhealthy\"}") == 1;
      },
      20s))
      << body;
  // Per GPU (issue 30, item 6): which GPU raised the XID, as dcgm-exporter's series say.
  EXPECT_EQ(series(body, "kgpu_health_xid_events_total{gpu=\"" + ids[4] + "\",xid=\"79\"}"), 1) << body;

  int status = 0;
  get(port, "/healthz", &status);
  EXPECT_EQ(status, 200);
}

TEST_F(OperateE2E, ReadyzTurnsReadyOnlyAfterRegistration) {
  sim->stop();  // no kubelet yet
  std::filesystem::remove(plugin_dir + "/kubelet.sock");
  PluginOptions options;
  options.extra_args = {"--metrics-addr", "127.0.0.1:0"};
  auto plugin = start(options);
  int port = 0;
  ASSERT_TRUE(wait_until([&] { return (port = metrics_port(*plugin)) > 0; }, 20s)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("kgpu-nvidia.com-gpu.sock") != std::string::npos; }, 20s))
      << diagnostics(*plugin);
  int status = 0;
  get(port, "/readyz", &status);
  EXPECT_EQ(status, 503) << diagnostics(*plugin);
  get(port, "/healthz", &status);
  EXPECT_EQ(status, 200);

  sim = std::make_unique<sim::KubeletSim>(plugin_dir);
  ASSERT_TRUE(sim->start().ok());
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { get(port, "/readyz", &status); return status == 200; }, 20s)) << diagnostics(*plugin);
}

TEST_F(OperateE2E, LabelsFollowConfigChangesAndLeaveOnExit) {
  std::string config = work.write("config/config.yaml", "version: v1\n");
  std::string labels = work.file("features.d/kgpu");
  std::filesystem::create_directories(work.file("features.d"));
  PluginOptions options;
  options.config_file = config;
  options.extra_args = {"--labels", "--output-file", labels};
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return read_file(labels).find("nvidia.com/gpu.count=8\n") != std::string::npos; }, 20s))
      << diagnostics(*plugin);
  std::string first = read_file(labels);
  EXPECT_NE(first.find("nvidia.com/gpu.product=NVIDIA-A100-SXM4-40GB\n"), std::string::npos) << first;
  EXPECT_NE(first.find("nvidia.com/gpu.replicas=1\n"), std::string::npos) << first;

  replace_file(config, time_slicing(4));  // seen through inotify: no SIGHUP
  ASSERT_TRUE(wait_healthy(kGpu, 32)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return read_file(labels).find("nvidia.com/gpu.replicas=4\n") != std::string::npos; }, 20s))
      << diagnostics(*plugin);
  EXPECT_NE(read_file(labels).find("nvidia.com/gpu.sharing-strategy=time-slicing\n"), std::string::npos)
      << read_file(labels);

  plugin->signal(SIGTERM);
  auto rc = plugin->wait_exit(5s);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 0) << diagnostics(*plugin);
  EXPECT_FALSE(path_exists(labels));
}

TEST_F(OperateE2E, InvalidReloadKeepsServingTheOldPlanAndSighupAppliesAValidOne) {
  std::string config = work.write("cfg/config.yaml", time_slicing(2));
  PluginOptions options;
  options.config_file = config;
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 16)) << diagnostics(*plugin);

  replace_file(config, time_slicing(0));  // replicas < 1: invalid
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("keeping the current plan") != std::string::npos; }, 20s))
      << diagnostics(*plugin);
  auto snap = sim->snapshot();
  EXPECT_EQ(snap.find(kGpu)->devices.size(), 16u);
  EXPECT_EQ(snap.find(kGpu)->registrations, 1);
  EXPECT_TRUE(sim->allocate(kGpu, {snap.find(kGpu)->device_ids()[0]}).ok());

  // Written in place (no rename) and applied by SIGHUP; the file watch may see it too.
  std::ofstream(config) << time_slicing(3);
  plugin->signal(SIGHUP);
  ASSERT_TRUE(wait_healthy(kGpu, 24)) << diagnostics(*plugin);
  EXPECT_EQ(sim->snapshot().find(kGpu)->registrations, 1);  // same resource: no re-registration
  EXPECT_TRUE(plugin->running());
}

TEST_F(OperateE2E, ConfigReloadDoesNotResurrectAFailedGpu) {
  fake_nvml::Control control(work.file("nvml.control"));
  std::string config = work.write("cfg/config.yaml", "version: v1\n");
  PluginOptions options;
  options.config_file = config;
  options.env["KGPU_FAKE_NVML_CONTROL"] = control.path();
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("health: watching") != std::string::npos; }, 20s));
  auto ids = sim->snapshot().find(kGpu)->device_ids();
  ASSERT_TRUE(control.inject_xid(ids[6], 48));  // double-bit ECC: unhealthy until reset
  ASSERT_TRUE(wait_healthy(kGpu, 7)) << diagnostics(*plugin);

  replace_file(config, time_slicing(2));  // re-discovery: NVML alone would call the GPU healthy
  ASSERT_TRUE(wait_healthy(kGpu, 14, 1, 16)) << diagnostics(*plugin);
  for (const auto& id : sim->snapshot().find(kGpu)->device_ids())
    EXPECT_EQ(health_of(kGpu, id), id.rfind(ids[6] + "::", 0) == 0 ? "Unhealthy" : "Healthy") << id;
}

TEST_F(OperateE2E, SeparateLabelsDaemonWritesThenRemovesTheFile) {
  FakeNode node = make_fake_node("hgx-h100.yaml", work.file("node"));
  std::string labels = work.file("features.d/kgpu");
  std::filesystem::create_directories(work.file("features.d"));
  ProcessOptions p;
  p.argv = {kgpu_binary(), "labels", "--daemon", "--output-file", labels, "--sysfs-root", node.sysfs_root,
            "--sleep-interval", "infinite"};
  p.env = fake_nvml_env(node);
  ChildProcess daemon(p, work.path(), "labels");
  ASSERT_TRUE(wait_until([&] { return read_file(labels).find("nvidia.com/gpu.count=8\n") != std::string::npos; }, 20s))
      << daemon.stderr_text();
  EXPECT_NE(read_file(labels).find("nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3\n"), std::string::npos)
      << read_file(labels);
  // Issue 41: the GFD-only pod's log says where it writes and what (the plugin's labeller does).
  ASSERT_TRUE(wait_until([&] { return daemon.stderr_text().find("labels: wrote ") != std::string::npos; }, 20s))
      << daemon.stderr_text();
  EXPECT_NE(daemon.stderr_text().find("labels: writing " + labels + " now and on SIGHUP"), std::string::npos)
      << daemon.stderr_text();
  EXPECT_NE(daemon.stderr_text().find(" labels to " + labels), std::string::npos) << daemon.stderr_text();
  daemon.signal(SIGTERM);
  auto rc = daemon.wait_exit(5s);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 0) << daemon.stderr_text();
  EXPECT_FALSE(path_exists(labels));
  EXPECT_NE(daemon.stderr_text().find("labels: removed " + labels), std::string::npos) << daemon.stderr_text();
}

TEST_F(OperateE2E, NodeLabelChoosesTheConfigAndSwitchesIt) {
  const std::string label = "nvidia.com/device-plugin.config";
  std::string dir = work.file("available-configs");
  work.write("available-configs/default", "version: v1\n");
  work.write("available-configs/shared", time_slicing(2));
  FakeApiServer api("gpu-node-1", {{label, "shared"}});
  PluginOptions options;
  options.env = {{"NODE_NAME", "gpu-node-1"},         {"KGPU_CONFIG_DIR", dir},
                 {"KGPU_CONFIG_DEFAULT", "default"},   {"KGPU_NODE_CONFIG_LABEL", label},
                 {"KGPU_KUBE_API", api.url()},         {"CONFIG_FILE", dir + "/default"}};
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 16)) << diagnostics(*plugin);  // the label chose "shared" at start-up
  ASSERT_TRUE(api.wait_watching(20s));

  api.set_labels({});  // label removed: back to the default config
  ASSERT_TRUE(wait_healthy(kGpu, 8)) << diagnostics(*plugin);

  api.set_labels({{label, "no-such-config"}});  // a clear error; the default keeps being served
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("names no config") != std::string::npos; }, 20s))
      << diagnostics(*plugin);
  EXPECT_EQ(sim->snapshot().find(kGpu)->devices.size(), 8u);

  api.set_labels({{label, "shared"}});
  ASSERT_TRUE(wait_healthy(kGpu, 16)) << diagnostics(*plugin);
  EXPECT_EQ(sim->snapshot().find(kGpu)->registrations, 1);  // switching configs never re-registered
}

}  // namespace
}  // namespace kgpu::test
