// End to end: the real `kgpu plugin` binary, the fake NVML (DGX A100 fleet) and the in-process
// kubelet simulator, over real unix sockets in a per-test temp dir.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "e2e/sim_fixture.h"

namespace kgpu::test {
namespace {

const std::string kGpu = "nvidia.com/gpu";

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

class PluginE2E : public SimE2E {
 protected:
  // Waits until the kubelet simulator streams `count` healthy devices for nvidia.com/gpu.
  bool wait_ready(size_t count = 8, int min_registrations = 1) { return wait_healthy(kGpu, count, min_registrations); }
};

TEST_F(PluginE2E, RegistersAndAdvertisesEveryGpu) {
  auto plugin = start();
  ASSERT_TRUE(wait_ready()) << diagnostics(*plugin);
  auto snap = sim->snapshot();
  const auto* r = snap.find(kGpu);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->registrations, 1);
  EXPECT_EQ(r->endpoint, "kgpu-nvidia.com-gpu.sock");
  EXPECT_TRUE(r->preferred_allocation_available);
  ASSERT_EQ(r->devices.size(), 8u);
  for (const auto& d : r->devices) {
    EXPECT_EQ(d.id.rfind("GPU-", 0), 0u) << d.id;
    EXPECT_EQ(d.health, "Healthy");
    EXPECT_EQ(d.numa_nodes.size(), 1u) << d.id;  // the DGX A100 fleet gives every GPU a NUMA node
  }
  struct stat st {};
  ASSERT_EQ(::stat((plugin_dir + "/kgpu-nvidia.com-gpu.sock").c_str(), &st), 0);
  EXPECT_TRUE(S_ISSOCK(st.st_mode));
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_TRUE(plugin->running());
}

TEST_F(PluginE2E, AllocatesOneTwoAndAllGpus) {
  auto plugin = start();
  ASSERT_TRUE(wait_ready()) << diagnostics(*plugin);
  auto ids = sim->snapshot().find(kGpu)->device_ids();
  for (size_t n : {size_t{1}, size_t{2}, ids.size()}) {
    std::vector<std::string> want(ids.begin(), ids.begin() + static_cast<long>(n));
    auto edits = sim->allocate(kGpu, want);
    ASSERT_TRUE(edits.ok()) << edits.error().message;
    EXPECT_EQ(edits->envs["NVIDIA_VISIBLE_DEVICES"], join(want)) << n << " GPUs";
  }
  // Several containers in one request: one response each, in order.
  auto multi = sim->allocate_containers(kGpu, {{ids[0]}, {ids[1], ids[2]}});
  ASSERT_TRUE(multi.ok()) << multi.error().message;
  ASSERT_EQ(multi->size(), 2u);
  EXPECT_EQ((*multi)[1].envs["NVIDIA_VISIBLE_DEVICES"], ids[1] + "," + ids[2]);
}

TEST_F(PluginE2E, RejectsEveryBadAllocateInputAndDeduplicatesIds) {
  auto plugin = start();
  ASSERT_TRUE(wait_ready()) << diagnostics(*plugin);
  auto ids = sim->snapshot().find(kGpu)->device_ids();

  auto unknown = sim->allocate(kGpu, {ids[0], "GPU-does-not-exist"});
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, Error::Code::InvalidArgument);
  EXPECT_NE(unknown.error().message.find("GPU-does-not-exist"), std::string::npos) << unknown.error().message;
  EXPECT_NE(unknown.error().message.find(kGpu), std::string::npos) << unknown.error().message;

  // A repeated ID is allocated once, as NVIDIA's plugin (v0.18+) does, and said once in the log.
  auto duplicate = sim->allocate(kGpu, {ids[1], ids[1], ids[1]});
  ASSERT_TRUE(duplicate.ok()) << duplicate.error().message;
  EXPECT_EQ(duplicate->envs["NVIDIA_VISIBLE_DEVICES"], ids[1]);
  const std::string said = "device IDs requested more than once, each allocated once: " + ids[1];
  const std::string log = plugin->stderr_text();
  const size_t at = log.find(said);
  EXPECT_NE(at, std::string::npos) << diagnostics(*plugin);
  EXPECT_EQ(log.find(said, at + 1), std::string::npos) << diagnostics(*plugin);

  auto empty = sim->allocate(kGpu, {});
  ASSERT_FALSE(empty.ok());
  EXPECT_EQ(empty.error().code, Error::Code::InvalidArgument);
  EXPECT_NE(empty.error().message.find(kGpu), std::string::npos) << empty.error().message;

  auto no_containers = sim->allocate_containers(kGpu, {});
  ASSERT_FALSE(no_containers.ok());
  EXPECT_EQ(no_containers.error().code, Error::Code::InvalidArgument);

  // The daemon keeps serving valid requests after bad ones.
  EXPECT_TRUE(sim->allocate(kGpu, {ids[0]}).ok());
  EXPECT_TRUE(plugin->running());
}

TEST_F(PluginE2E, PreferredAllocationIsAValidChoice) {
  auto plugin = start();
  ASSERT_TRUE(wait_ready()) << diagnostics(*plugin);
  auto ids = sim->snapshot().find(kGpu)->device_ids();
  auto chosen = sim->preferred(kGpu, ids, {ids[5]}, 4);
  ASSERT_TRUE(chosen.ok()) << chosen.error().message;
  ASSERT_EQ(chosen->size(), 4u);
  EXPECT_EQ((*chosen)[0], ids[5]);  // must-include first
  std::set<std::string> distinct(chosen->begin(), chosen->end());
  EXPECT_EQ(distinct.size(), 4u);
  for (const auto& id : *chosen) EXPECT_NE(std::find(ids.begin(), ids.end(), id), ids.end()) << id;
  EXPECT_TRUE(sim->pre_start(kGpu, *chosen).ok());
}

TEST_F(PluginE2E, ReRegistersAfterKubeletRestart) {
  auto plugin = start();
  ASSERT_TRUE(wait_ready()) << diagnostics(*plugin);
  ASSERT_TRUE(sim->restart().ok());
  ASSERT_TRUE(wait_ready(8, 2)) << diagnostics(*plugin);
  auto snap = sim->snapshot();
  EXPECT_EQ(snap.restarts, 1);
  EXPECT_GE(snap.find(kGpu)->last_registered, snap.last_restart);
  EXPECT_TRUE(path_exists(plugin_dir + "/kgpu-nvidia.com-gpu.sock"));
  // The re-registered endpoint serves Allocate.
  EXPECT_TRUE(sim->allocate(kGpu, {snap.find(kGpu)->device_ids()[0]}).ok());
  // Either our socket's deletion or kubelet.sock's re-creation is seen first; both say why.
  EXPECT_NE(plugin->stderr_text().find("kubelet restart"), std::string::npos) << diagnostics(*plugin);
}

TEST_F(PluginE2E, KilledPluginIsSeenAgainAfterRestart) {
  auto plugin = start();
  ASSERT_TRUE(wait_ready()) << diagnostics(*plugin);
  plugin->signal(SIGKILL);
  ASSERT_TRUE(plugin->wait_exit(10s).has_value());
  ASSERT_TRUE(sim->wait_for([](const sim::Snapshot& s) { return !s.find(kGpu)->connected; }, 10s));
  PluginOptions again;
  again.name = "plugin2";
  auto second = start(again);  // replaces the stale socket left by the killed process
  ASSERT_TRUE(wait_ready(8, 2)) << diagnostics(*second);
  EXPECT_TRUE(sim->allocate(kGpu, {sim->snapshot().find(kGpu)->device_ids()[0]}).ok());
}

TEST_F(PluginE2E, NvmlAbsentWithFailOnInitErrorExitsOne) {
  PluginOptions options;
  options.fake_nvml = false;
  options.extra_args = {"--fail-on-init-error=true"};
  auto plugin = start(options);
  auto rc = plugin->wait_exit(20s);
  ASSERT_TRUE(rc.has_value()) << diagnostics(*plugin);
  EXPECT_EQ(*rc, 1);
  std::string err = plugin->stderr_text();
  EXPECT_NE(err.find("failOnInitError=true"), std::string::npos) << err;
  EXPECT_EQ(sim->snapshot().registrations, 0);
}

TEST_F(PluginE2E, NvmlAbsentWithoutFailOnInitErrorKeepsRunning) {
  PluginOptions options;
  options.fake_nvml = false;
  options.extra_args = {"--fail-on-init-error=false"};
  auto plugin = start(options);
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("serving zero devices") != std::string::npos; }, 20s))
      << diagnostics(*plugin);
  EXPECT_TRUE(plugin->running());
  EXPECT_EQ(sim->snapshot().registrations, 0);
  plugin->signal(SIGTERM);
  auto rc = plugin->wait_exit(5s);
  ASSERT_TRUE(rc.has_value());
  EXPECT_EQ(*rc, 0);
}

TEST_F(PluginE2E, SigtermStopsWithinOneSecondAndRemovesSockets) {
  auto plugin = start();
  ASSERT_TRUE(wait_ready()) << diagnostics(*plugin);
  std::string socket = plugin_dir + "/kgpu-nvidia.com-gpu.sock";
  ASSERT_TRUE(path_exists(socket));
  auto t0 = std::chrono::steady_clock::now();
  plugin->signal(SIGTERM);
  auto rc = plugin->wait_exit(5s);
  auto took = std::chrono::steady_clock::now() - t0;
  ASSERT_TRUE(rc.has_value()) << diagnostics(*plugin);
  EXPECT_EQ(*rc, 0) << diagnostics(*plugin);
  EXPECT_LT(took, 1s);
  EXPECT_FALSE(path_exists(socket));
  EXPECT_TRUE(path_exists(plugin_dir + "/kubelet.sock"));  // never touches the kubelet's socket
}

TEST_F(PluginE2E, SocketPathTooLongIsAClearStartupError) {
  std::string deep = work.path() + "/" + std::string(100, 'd');
  std::filesystem::create_directories(deep);
  PluginOptions options;
  options.plugin_dir = deep;  // the kubelet socket and ours would not fit in sockaddr_un
  auto plugin = start_plugin(options, work.path());
  auto rc = plugin->wait_exit(20s);
  ASSERT_TRUE(rc.has_value()) << diagnostics(*plugin);
  EXPECT_EQ(*rc, 1);
  EXPECT_NE(plugin->stderr_text().find("unix socket path may be at most"), std::string::npos) << diagnostics(*plugin);
}

TEST(DemoE2E, DemoExitsZero) {
  TempDir work{"kgpu-demo"};
  ProcessOptions p;
  p.argv = {kgpu_binary(), "demo"};
  p.env = {{"KGPU_FAKE_NVML_DIR", fake_nvml_dir()}, {"KGPU_DEMO_FLEET", fleet_path("dgx-a100.yaml")}};
  ChildProcess demo(p, work.path(), "demo");
  auto rc = demo.wait_exit(60s);
  ASSERT_TRUE(rc.has_value()) << demo.stdout_text() << demo.stderr_text();
  EXPECT_EQ(*rc, 0) << demo.stdout_text() << demo.stderr_text();
  std::string out = demo.stdout_text();
  EXPECT_NE(out.find("NVIDIA_VISIBLE_DEVICES"), std::string::npos) << out;
  EXPECT_NE(out.find("re-registered"), std::string::npos) << out;
}

}  // namespace
}  // namespace kgpu::test
