// End to end, dynamic MIG (issue 42): `kgpu plugin --dra --dra-mig-dynamic 0` on an 8x H100 node
// of the fake NVML, the kubelet simulator preparing claims for placements the scheduler would
// pick: 3g.40gb + 2g.20gb + 1g.10gb + 1g.10gb on GPU 0 all prepared with their instances in the
// fake (its MIG state file, KGPU_FAKE_NVML_MIG_STATE, outlives kgpu as a driver's instances do), a
// fifth that does not fit refused by NVML's placement answer, unprepare leaving the GPU empty, and
// a SIGKILL between the GPU instance's and the compute instance's creation
// (KGPU_FAKE_NVML_BLOCK_CI_CREATE) leaving no orphan instance once kgpu is back. `kgpu devices -o
// dra --live` says what each claim made and what is free.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>

#include "e2e/dra_fixture.h"
#include "sim/dra_kubelet_sim.h"
#include "support/eventually.h"
#include "support/fake_api_server.h"

namespace kgpu::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;

class DraDynamicMigPrepareE2E : public DraSimE2E {
 protected:
  PluginOptions options(const FakeApiServer& api) {
    PluginOptions o = dra_options(api, "0");
    o.fleet_file = "hgx-h100.yaml";
    o.extra_args.insert(o.extra_args.end(), {"--dra-mig-dynamic", "0"});
    o.env["KGPU_FAKE_NVML_MIG_STATE"] = state;
    o.env["KGPU_FAKE_NVML_BLOCK_CI_CREATE"] = gate;
    return o;
  }
  std::unique_ptr<ChildProcess> start(const FakeApiServer& api) {
    PluginOptions o = options(api);
    o.plugin_dir = plugin_dir;
    return start_plugin(o, work.path());
  }
  // The GPU instances of GPU 0 in the fake's MIG state ("gi 0 <id> <profile> <start>" lines).
  size_t gpu0_instances() const {
    std::ifstream in(state);
    size_t n = 0;
    for (std::string line; std::getline(in, line);) n += line.starts_with("gi 0 ");
    return n;
  }
  void open_gate() const { std::ofstream(gate).flush(); }
  // `kgpu devices -o dra --live` on the plugin's node, config and checkpoint: its notes (stderr).
  std::string devices_live(const FakeApiServer& api) {
    const PluginOptions o = options(api);
    FakeNode node;
    node.fleet = fleet_path(o.fleet_file);
    node.root = work.path() + "/node-plugin";  // the tree start_plugin generated for it
    ProcessOptions cli;
    cli.argv = {kgpu_binary(), "devices", "-o", "dra", "--live", "--kubelet-socket", plugin_dir + "/kubelet.sock",
                "--sysfs-root", node.root + "/sys", "--proc-root", node.root + "/proc", "--dev-root", node.root};
    for (size_t i = 0; i < o.extra_args.size(); ++i) {  // the plugin's flags but where CDI specs go
      if (o.extra_args[i] == "--cdi-spec-dir") ++i;
      else cli.argv.push_back(o.extra_args[i]);
    }
    cli.env = fake_nvml_env(node);
    for (const auto& [k, v] : o.env) cli.env[k] = v;
    cli.env["NODE_NAME"] = "node-1";
    ChildProcess devices(cli, work.path(), "devices-live");
    EXPECT_EQ(devices.wait_exit(20s), 0) << devices.stderr_text();
    return devices.stderr_text();
  }

  std::string state = work.file("fake-mig-state");
  std::string gate = work.file("ci-create-gate");
};

TEST_F(DraDynamicMigPrepareE2E, PlacementsGetInstancesUnprepareEmptiesAndAKillMidCreateLeavesNoOrphan) {
  fs::create_directories(cdi_dir);
  open_gate();
  FakeApiServer api("node-1", {});
  api.set_kubernetes_minor(34);  // counters served: the placements are published
  api.set_partitionable_devices(FakeApiServer::PartitionableDevices::Served);
  auto plugin = start(api);
  sim::DraKubeletSim kubelet(work.path(), 34);
  auto registered = kubelet.wait_for_plugin(20s);
  ASSERT_TRUE(registered) << registered.error().message << "\n" << diagnostics(*plugin);
  // The placements the scheduler gives 1g, 1g, 2g, 3g claims (first fit, device-name order), prepared
  // here in the order 3g + 2g + 1g + 1g: prepare takes the placement it is given.
  const std::vector<std::string> plan = {"gpu-0-mig-3g40gb-9-4", "gpu-0-mig-2g20gb-14-2", "gpu-0-mig-1g10gb-19-0",
                                         "gpu-0-mig-1g10gb-19-1"};
  ASSERT_TRUE(eventually([&] { return published(api).contains(plan.front()); }, 20s))
      << "GPU 0's placements are not published\n" << diagnostics(*plugin);

  for (size_t i = 0; i < plan.size(); ++i) {
    const std::string uid = "uid-" + std::to_string(i);
    api.put_resource_claim(claim(uid, plan[i], uid));
    auto prepared = kubelet.prepare(kDraGpuDriver, {{"team-a", uid, uid}});
    ASSERT_TRUE(prepared) << prepared.error().message;
    ASSERT_TRUE(prepared->at(uid).error.empty()) << plan[i] << ": " << prepared->at(uid).error << "\n"
                                                 << diagnostics(*plugin);
  }
  EXPECT_EQ(gpu0_instances(), 4u) << read_text(state);
  // What each claim made, and what is left: the 4 placements fill GPU 0's 8 memory slices.
  const std::string live = devices_live(api);
  for (size_t i = 0; i < plan.size(); ++i)
    EXPECT_NE(live.find(plan[i] + ": made for claim uid-" + std::to_string(i) + ": MIG-"), std::string::npos)
        << plan[i] << "\n" << live;
  EXPECT_NE(live.find("(gpu-0-counter-set): 0 of 18 placements free, 4 instances made by kgpu; the full GPU is not"),
            std::string::npos)
      << live;
  EXPECT_EQ(live.find("warning: "), std::string::npos) << live;  // kgpu's instances are not foreign
  // A fifth that does not fit (its slice is the 3g's): NVML's answer, per claim; kgpu runs on.
  api.put_resource_claim(claim("uid-9", "gpu-0-mig-1g10gb-19-6", "uid-9"));
  auto refused = kubelet.prepare(kDraGpuDriver, {{"team-a", "uid-9", "uid-9"}});
  ASSERT_TRUE(refused) << refused.error().message;
  EXPECT_NE(refused->at("uid-9").error.find("nvmlDeviceCreateGpuInstanceWithPlacement"), std::string::npos)
      << refused->at("uid-9").error;
  EXPECT_TRUE(plugin->running());
  EXPECT_EQ(gpu0_instances(), 4u);

  for (size_t i = 0; i < plan.size(); ++i) {
    const std::string uid = "uid-" + std::to_string(i);
    auto unprepared = kubelet.unprepare(kDraGpuDriver, {{"team-a", uid, uid}});
    ASSERT_TRUE(unprepared) << unprepared.error().message;
    EXPECT_EQ(unprepared->at(uid), "");
  }
  EXPECT_EQ(gpu0_instances(), 0u) << read_text(state);

  // kgpu killed between the GPU instance and its compute instance: the fake keeps the GPU
  // instance (as a driver would), kgpu's checkpoint holds the intent.
  fs::remove(gate);
  api.put_resource_claim(claim("uid-k", plan.front(), "uid-k"));
  auto in_flight = std::async(std::launch::async, [&] {
    sim::DraKubeletSim caller(work.path(), 34);
    (void)caller.wait_for_plugin(5s);
    return caller.prepare(kDraGpuDriver, {{"team-a", "uid-k", "uid-k"}}, 5s);
  });
  ASSERT_TRUE(eventually([&] { return fs::exists(gate + ".blocked"); }, 20s)) << diagnostics(*plugin);
  plugin->signal(SIGKILL);
  ASSERT_TRUE(plugin->wait_exit(10s));
  (void)in_flight.get();
  EXPECT_EQ(gpu0_instances(), 1u) << read_text(state);

  open_gate();
  plugin = start(api);
  EXPECT_TRUE(eventually([&] { return gpu0_instances() == 0; }, 20s))
      << "an orphan instance after the restart:\n" << read_text(state) << diagnostics(*plugin);
  EXPECT_TRUE(eventually([&] { return plugin->stderr_text().find("destroyed dynamic MIG device") != std::string::npos; },
                         5s))
      << diagnostics(*plugin);
  plugin->signal(SIGTERM);
  EXPECT_EQ(plugin->wait_exit(10s), 0) << diagnostics(*plugin);
}

}  // namespace
}  // namespace kgpu::test
