// End to end: `kgpu plugin --dra` on a simulated 8-GPU node, with the kubelet simulator's DRA side
// (plugin watcher, NodePrepareResources / NodeUnprepareResources over gRPC C++) and the fake API
// server (ResourceSlices written and validated there, ResourceClaims read from there):
// registration, publishing, the split between the two APIs, prepare with a CDI spec per claim,
// a daemon restart between prepare and unprepare, and unprepare.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <thread>

#include <nlohmann/json.hpp>

#include "e2e/dra_fixture.h"
#include "fake-nvml/fake_nvml_control.h"
#include "mps/claim_shm.h"
#include "mps/readiness.h"
#include "sim/dra_kubelet_sim.h"
#include "support/eventually.h"
#include "support/fake_api_server.h"
#include "support/mounts.h"

namespace kgpu::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
const std::string kGpu = "nvidia.com/gpu";
const std::string& kDriver = kDraGpuDriver;

class DraE2E : public DraSimE2E {
 protected:
  // DRA for a sysfs-only node (no NVML) and the vendors given.
  PluginOptions sysfs_dra_options(const FakeApiServer& api, const std::string& fixture, const std::string& vendors) {
    PluginOptions options;
    options.fleet_file = "";
    options.fake_nvml = false;
    options.node_dir = std::string(KGPU_SYSFS_FIXTURES_DIR) + "/" + fixture;
    options.env = {{"NODE_NAME", "node-1"}, {"KGPU_KUBE_API", api.url()}};
    options.extra_args = {"--dra", "--dra-vendors", vendors, "--cdi-spec-dir", cdi_dir};
    return options;
  }
  // Names of the devices published for `driver`.
  static std::vector<std::string> device_names(const FakeApiServer& api, const std::string& driver) {
    std::vector<std::string> out;
    for (const auto& [name, slice] : api.slices())
      if (slice["spec"].value("driver", "") == driver)
        for (const auto& d : slice["spec"]["devices"]) out.push_back(d.value("name", ""));
    return out;
  }
  // Every CDI spec in the CDI folder, as one text.
  std::string cdi_specs() const {
    std::string text;
    for (const auto& e : fs::directory_iterator(cdi_dir)) {
      std::ifstream in(e.path());
      text += std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }
    return text;
  }
  // A claim named after its UID whose opaque GpuConfig asks for `sharing`.
  static nlohmann::json claim_with_sharing(const std::string& uid, const std::string& device, nlohmann::json sharing) {
    auto c = claim(uid, device);
    c["metadata"]["name"] = uid;
    nlohmann::json parameters = {{"apiVersion", "resource.nvidia.com/v1beta1"}, {"kind", "GpuConfig"},
                                 {"sharing", std::move(sharing)}};
    c["status"]["allocation"]["devices"]["config"] = {
        {{"source", "FromClaim"}, {"requests", {"gpu"}}, {"opaque", {{"driver", kDriver}, {"parameters", parameters}}}}};
    return c;
  }
};

TEST_F(DraE2E, RegistersPublishesPreparesAndSurvivesARestartBetweenPrepareAndUnprepare) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  auto plugin = start(dra_options(api, "0,1,2,3"));
  // The device-plugin API keeps the other four GPUs.
  ASSERT_TRUE(wait_healthy(kGpu, 4)) << diagnostics(*plugin);

  sim::DraKubeletSim kubelet(work.path(), 34);
  auto registered = kubelet.wait_for_plugin(20s);
  ASSERT_TRUE(registered) << registered.error().message << "\n" << diagnostics(*plugin);
  EXPECT_EQ(registered->driver, kDriver);
  EXPECT_EQ(registered->service, "v1.DRAPlugin");

  // DRA publishes the four GPUs it owns (and their MIG devices, none on this fleet).
  ASSERT_TRUE(eventually([&] { return published(api).size() == 4; }, 20s))
      << "published " << published(api).size() << "\n" << diagnostics(*plugin);
  EXPECT_TRUE(api.slice_rejections().empty());
  std::string device = *published(api).begin();

  api.put_resource_claim(claim("uid-1", device));
  auto prepared = kubelet.prepare(kDriver, {{"team-a", "train", "uid-1"}});
  ASSERT_TRUE(prepared) << prepared.error().message;
  const auto& answer = prepared->at("uid-1");
  ASSERT_TRUE(answer.error.empty()) << answer.error << "\n" << diagnostics(*plugin);
  ASSERT_EQ(answer.devices.size(), 1u);
  EXPECT_EQ(answer.devices[0].device, device);
  EXPECT_EQ(answer.devices[0].pool, "node-1");
  ASSERT_FALSE(answer.devices[0].cdi_device_ids.empty());
  auto spec_files = [&] {
    size_t n = 0;
    for (const auto& e : fs::directory_iterator(cdi_dir)) n += e.path().string().find("uid-1") != std::string::npos;
    return n;
  };
  EXPECT_EQ(spec_files(), 1u);

  // A claim for a GPU the device-plugin API owns is refused, by name.
  api.put_resource_claim(claim("uid-2", "gpu-7"));
  auto refused = kubelet.prepare(kDriver, {{"team-a", "train", "uid-2"}});
  ASSERT_TRUE(refused);
  EXPECT_FALSE(refused->at("uid-2").error.empty());

  // The daemon restarts between prepare and unprepare: the checkpoint keeps the claim.
  plugin->signal(SIGTERM);
  ASSERT_EQ(plugin->wait_exit(10s), 0) << diagnostics(*plugin);
  // Its list now also names GPU 9, which this node lacks: logged, and the other entries still apply.
  plugin = start(dra_options(api, "0,1,2,3,9"));
  ASSERT_TRUE(wait_healthy(kGpu, 4)) << diagnostics(*plugin);
  auto logged = [&] { return plugin->stderr_text().find("\"9\" name no NVIDIA GPU") != std::string::npos; };
  EXPECT_TRUE(eventually(logged, 20s)) << diagnostics(*plugin);
  sim::DraKubeletSim restarted(work.path(), 33);  // and the kubelet is an older one now
  auto again = restarted.wait_for_plugin(20s);
  ASSERT_TRUE(again) << again.error().message << "\n" << diagnostics(*plugin);
  EXPECT_EQ(again->service, "v1beta1.DRAPlugin");
  auto repeated = restarted.prepare(kDriver, {{"team-a", "train", "uid-1"}});
  ASSERT_TRUE(repeated);
  ASSERT_TRUE(repeated->at("uid-1").error.empty()) << repeated->at("uid-1").error;
  EXPECT_EQ(repeated->at("uid-1").devices[0].cdi_device_ids, answer.devices[0].cdi_device_ids);

  auto unprepared = restarted.unprepare(kDriver, {{"team-a", "train", "uid-1"}});
  ASSERT_TRUE(unprepared);
  EXPECT_EQ(unprepared->at("uid-1"), "");
  EXPECT_EQ(spec_files(), 0u);
  EXPECT_EQ(published(api).size(), 4u);

  plugin->signal(SIGTERM);
  EXPECT_EQ(plugin->wait_exit(10s), 0) << diagnostics(*plugin);
  EXPECT_FALSE(fs::exists(work.path() + "/plugins_registry/" + kDriver + "-reg.sock"));
}

// On an API server that drops device taints (DRADeviceTaints off), an XID on a GPU DRA owns takes
// exactly that device out of the published slice (the device-plugin API's GPUs are untouched), and
// kgpu says once why; slices someone deletes come back at once (the watch); a restarted kubelet
// finds the registration socket again.
TEST_F(DraE2E, WithoutTaintsServedAnXidTakesTheDeviceOutOfTheSliceAndDeletedSlicesComeBack) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  api.set_device_taints(FakeApiServer::DeviceTaints::Stripped);
  fake_nvml::Control control{work.file("nvml.control")};
  auto options = dra_options(api, "0,1");
  options.env["KGPU_FAKE_NVML_CONTROL"] = control.path();
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 6)) << diagnostics(*plugin);
  sim::DraKubeletSim kubelet(work.path(), 34);
  auto registered = kubelet.wait_for_plugin(20s);
  ASSERT_TRUE(registered) << registered.error().message << "\n" << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return published(api).size() == 2; }, 20s)) << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return plugin->stderr_text().find("health: watching") != std::string::npos; }, 20s))
      << diagnostics(*plugin);

  const auto uuids = published_uuids(api);
  ASSERT_EQ(uuids.size(), 2u);
  const auto& [victim, victim_uuid] = *uuids.begin();
  ASSERT_TRUE(control.inject_xid(victim_uuid, 79));
  auto only_the_other = [&, name = victim] {
    auto now = published(api);
    return now.size() == 1 && !now.count(name);
  };
  ASSERT_TRUE(eventually(only_the_other, 20s)) << diagnostics(*plugin);
  EXPECT_EQ(sim->snapshot().find(kGpu)->healthy_count(), 6u);
  const std::string log = plugin->stderr_text();
  EXPECT_NE(log.find("without its device taints; from now on unhealthy devices are left out"), std::string::npos)
      << log;

  // Someone deletes the slices (a controller, an operator): kgpu's watch of the node's slices puts
  // them back at once, without waiting for a change or a kubelet registration.
  const int creates_before = api.slice_counts().creates;
  for (const auto& entry : api.slices()) api.remove_slice(entry.first);
  EXPECT_TRUE(eventually([&] { return only_the_other() && api.slice_counts().creates > creates_before; }, 20s))
      << diagnostics(*plugin);
  // The kubelet restarts: it finds the registration socket again, and the slices stay right.
  sim::DraKubeletSim restarted(work.path(), 34);
  auto again = restarted.wait_for_plugin(20s);
  ASSERT_TRUE(again) << again.error().message << "\n" << diagnostics(*plugin);
  EXPECT_TRUE(eventually(only_the_other, 20s)) << diagnostics(*plugin);
  EXPECT_TRUE(api.slice_rejections().empty());
}

// The taints of device `name` in the published slices, without the server's timeAdded; null when
// the device is not published.
nlohmann::json taints_of(const FakeApiServer& api, const std::string& name) {
  for (const auto& [slice_name, slice] : api.slices())
    for (const auto& d : slice["spec"].value("devices", nlohmann::json::array())) {
      if (d.value("name", "") != name) continue;
      nlohmann::json taints = d.value("taints", nlohmann::json::array());
      for (auto& t : taints) t.erase("timeAdded");
      return taints;
    }
  return nullptr;
}

nlohmann::json taint(const std::string& xid, const std::string& effect) {
  return nlohmann::json::array({{{"key", "gpu.nvidia.com/xid"}, {"value", xid}, {"effect", effect}}});
}

// Issue 29, item 8: health as device taints, as NVIDIA's DRA driver publishes it. On a server that
// keeps them, an XID leaves the device in the slice with gpu.nvidia.com/xid=<XID>: NoSchedule, or
// NoExecute for an XID the operator opted in (kgpu.dra.noExecuteXids); an XID the policy ignores
// shows as an informational None taint; recovery lifts the taint.
TEST_F(DraE2E, XidsBecomeDeviceTaintsAndRecoveryLiftsThem) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  api.set_device_taints(FakeApiServer::DeviceTaints::Served);
  fake_nvml::Control control{work.file("nvml.control")};
  auto options = dra_options(api, "0,1,2");
  options.env["KGPU_FAKE_NVML_CONTROL"] = control.path();
  options.config_file = work.write("taints.yaml", R"(version: v1
kgpu:
  dra:
    noExecuteXids: [48]
  health:
    recovery:
      probeIntervalMs: 20
      quietPeriodMs: 3000
)");
  auto plugin = start(options);
  ASSERT_TRUE(eventually([&] { return published(api).size() == 3; }, 20s)) << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return plugin->stderr_text().find("health: watching") != std::string::npos; }, 20s))
      << diagnostics(*plugin);
  const auto uuids = published_uuids(api);
  ASSERT_EQ(uuids.size(), 3u);
  auto it = uuids.begin();
  const auto [recovering, recovering_uuid] = *it++;
  const auto [broken, broken_uuid] = *it++;
  const auto [busy, busy_uuid] = *it;
  ASSERT_TRUE(control.inject_xid(recovering_uuid, 74));  // NVLink error: unhealthy, recoverable
  ASSERT_TRUE(control.inject_ecc_double(broken_uuid));    // XID 48, opted in to NoExecute
  ASSERT_TRUE(control.inject_xid(busy_uuid, 13));         // an application's error: informational
  auto tainted = [&] {
    return taints_of(api, recovering) == taint("74", "NoSchedule") && taints_of(api, broken) == taint("48", "NoExecute") &&
           taints_of(api, busy) == taint("13", "None");
  };
  ASSERT_TRUE(eventually(tainted, 20s)) << api.slices().begin()->second.dump() << diagnostics(*plugin);
  EXPECT_EQ(published(api).size(), 3u) << "tainted devices stay published";
  // The recoverable one comes back after the quiet period: its taint is lifted, the others stay.
  auto recovered = [&] {
    return taints_of(api, recovering) == nlohmann::json::array() && taints_of(api, broken) == taint("48", "NoExecute");
  };
  EXPECT_TRUE(eventually(recovered, 20s)) << api.slices().begin()->second.dump() << diagnostics(*plugin);
  EXPECT_TRUE(api.slice_rejections().empty());
  EXPECT_EQ(plugin->stderr_text().find("without its device taints"), std::string::npos);
}

// A claim's opaque GpuConfig asks for a time-slice interval: kgpu runs nvidia-smi (a recording
// stand-in here) when it prepares the claim and puts the default back when it is unprepared.
// Another claim asks for MPS: `kgpu mps-daemon` (the real binary, with the fake
// nvidia-cuda-mps-control) runs the claim's own control daemon on the claim's GPU only, the prepare
// answers once it is ready, and the unprepare takes it away.
TEST_F(DraE2E, TimeSlicingAndMpsClaimsGetTheirSharing) {
  if (!can_mount_tmpfs()) GTEST_SKIP() << kNoMountsReason;
  fs::create_directories(cdi_dir);
  const std::string calls = work.file("nvidia-smi.calls");
  const std::string nvidia_smi = work.write("bin/nvidia-smi", "#!/bin/sh\necho \"$@\" >> '" + calls + "'\n");
  fs::permissions(nvidia_smi, fs::perms::owner_all);
  const std::string mps_root = work.file("mps");
  ProcessOptions supervisor_options;
  supervisor_options.argv = {kgpu_binary(), "mps-daemon", "--mps-root", mps_root, "--mps-control-binary",
                             std::string(KGPU_FIXTURES_DIR) + "/mps/nvidia-cuda-mps-control", "--claim-shm-size",
                             "16Mi"};
  ChildProcess supervisor(supervisor_options, work.path(), "mps-daemon");
  FakeApiServer api("node-1", {});
  auto options = dra_options(api, "0,1");
  options.extra_args.insert(options.extra_args.end(), {"--dra-nvidia-smi", nvidia_smi, "--mps-root", mps_root});
  auto plugin = start(options);
  sim::DraKubeletSim kubelet(work.path(), 34);
  ASSERT_TRUE(kubelet.wait_for_plugin(20s)) << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return published(api).size() == 2; }, 20s)) << diagnostics(*plugin);
  const auto uuids = published_uuids(api);
  const auto& [sliced, sliced_uuid] = *uuids.begin();
  const auto& [mps_device, mps_uuid] = *uuids.rbegin();

  const auto with_sharing = claim_with_sharing;
  api.put_resource_claim(with_sharing("uid-ts", sliced,
                                      {{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Long"}}}}));
  api.put_resource_claim(with_sharing("uid-mps", mps_device,
                                      {{"strategy", "MPS"}, {"mpsConfig", {{"defaultActiveThreadPercentage", 50}}}}));
  auto prepared = kubelet.prepare(kDriver, {{"team-a", "uid-ts", "uid-ts"}, {"team-a", "uid-mps", "uid-mps"}});
  ASSERT_TRUE(prepared) << prepared.error().message;
  EXPECT_EQ(prepared->at("uid-ts").error, "") << diagnostics(*plugin);
  EXPECT_EQ(prepared->at("uid-mps").error, "") << diagnostics(*plugin) << supervisor.stderr_text();
  auto read_calls = [&] {
    std::ifstream in(calls);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  // Lines, not their order: the two claims of one call are prepared side by side.
  auto lines = [](const std::string& text) {
    std::multiset<std::string> out;
    size_t start = 0;
    for (size_t nl; (nl = text.find('\n', start)) != std::string::npos; start = nl + 1)
      out.insert(text.substr(start, nl - start));
    return out;
  };
  // As NVIDIA's driver: DEFAULT compute mode and the interval for the time-sliced GPU,
  // EXCLUSIVE_PROCESS for the GPU under the claim's MPS daemon.
  EXPECT_EQ(lines(read_calls()), (std::multiset<std::string>{"-i " + sliced_uuid + " -c DEFAULT",
                                                             "compute-policy -i " + sliced_uuid + " --set-timeslice 3",
                                                             "-i " + mps_uuid + " -c EXCLUSIVE_PROCESS"}));

  // The MPS claim's daemon runs (its marker is live), sees the claim's GPU only, with the limits;
  // its containers get the pipe and the limits through the claim's CDI spec.
  const std::string claim_dir = mps_root + "/dra/uid-mps";
  EXPECT_TRUE(mps_marker_live(claim_dir + "/.ready")) << supervisor.stderr_text();
  const std::string daemon_log = read_file(claim_dir + "/log/fake-control.log");
  EXPECT_NE(daemon_log.find("visible " + mps_uuid + "\n"), std::string::npos) << daemon_log;
  EXPECT_NE(daemon_log.find("command set_default_active_thread_percentage 50"), std::string::npos) << daemon_log;
  const std::string specs = cdi_specs();
  EXPECT_NE(specs.find("CUDA_MPS_PIPE_DIRECTORY=/mps/dra/uid-mps/pipe"), std::string::npos) << specs;
  EXPECT_NE(specs.find("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=50"), std::string::npos) << specs;
  EXPECT_NE(specs.find(claim_dir + "/pipe"), std::string::npos) << specs;
  // Issue 28, item 5: the claim's containers and its daemon share a 16 MiB tmpfs of their own, not
  // <mpsRoot>/shm (every tenant's).
  const std::string shm = claim_dir + "/shm";
  EXPECT_NE(specs.find("\"hostPath\": \"" + shm + "\""), std::string::npos) << specs;
  EXPECT_EQ(specs.find(mps_root + "/shm\""), std::string::npos) << specs;
  struct statfs shm_fs {};
  struct stat shm_stat {};
  ASSERT_EQ(::statfs(shm.c_str(), &shm_fs), 0);
  ASSERT_EQ(::stat(shm.c_str(), &shm_stat), 0);
  EXPECT_EQ(static_cast<uint64_t>(shm_fs.f_blocks) * shm_fs.f_bsize, 16u << 20);
  EXPECT_NE(daemon_log.find("shm-device " + std::to_string(shm_stat.st_dev) + "\n"), std::string::npos) << daemon_log;

  // kgpu restarts between prepare and unprepare (issue 29, item 7): the checkpoint remembers which
  // GPUs it set, so the compute modes are still put back after the restart; the claim's daemon and
  // its shared memory (kgpu mps-daemon's) stay.
  plugin->signal(SIGTERM);
  ASSERT_EQ(plugin->wait_exit(20s), 0) << diagnostics(*plugin);
  plugin = start(options);
  sim::DraKubeletSim restarted(work.path(), 34);
  ASSERT_TRUE(restarted.wait_for_plugin(20s)) << diagnostics(*plugin);
  EXPECT_TRUE(mps_marker_live(claim_dir + "/.ready")) << supervisor.stderr_text();
  EXPECT_TRUE(is_tmpfs_mount_point(shm));
  std::map<std::string, std::string> unprepare_errors;
  auto unprepared_all = [&] {  // as the kubelet does, until kgpu knows its devices again
    auto answer = restarted.unprepare(kDriver, {{"team-a", "uid-ts", "uid-ts"}, {"team-a", "uid-mps", "uid-mps"}});
    if (!answer) return false;
    unprepare_errors = *answer;
    return unprepare_errors.at("uid-ts").empty() && unprepare_errors.at("uid-mps").empty();
  };
  ASSERT_TRUE(eventually(unprepared_all, 20s)) << unprepare_errors["uid-ts"] << unprepare_errors["uid-mps"]
                                               << diagnostics(*plugin);
  // Both GPUs back to the driver's defaults once their claims are gone.
  EXPECT_EQ(lines(read_calls()),
            (std::multiset<std::string>{"-i " + sliced_uuid + " -c DEFAULT", "compute-policy -i " + sliced_uuid + " --set-timeslice 3",
                                        "-i " + mps_uuid + " -c EXCLUSIVE_PROCESS", "-i " + sliced_uuid + " -c DEFAULT",
                                        "compute-policy -i " + sliced_uuid + " --set-timeslice 0", "-i " + mps_uuid + " -c DEFAULT",
                                        "compute-policy -i " + mps_uuid + " --set-timeslice 0"}));
  EXPECT_TRUE(eventually([&] { return !fs::exists(claim_dir); }, 20s)) << supervisor.stderr_text();
  EXPECT_TRUE(mounts_under(claim_dir).empty());
  supervisor.signal(SIGTERM);
  EXPECT_EQ(supervisor.wait_exit(20s), 0) << supervisor.stderr_text();
}

// Issue 28, item 1: kgpu.dra.gpus changes across a restart while GPUs are in use. A GPU a prepared
// claim holds stays DRA's, and one a pod holds stays the device-plugin API's, until released;
// each is logged with both owners. Without this, the other API hands the GPU out a second time.
TEST_F(DraE2E, ASplitChangeNeverHandsAHeldGpuToTheOtherApi) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  auto plugin = start(dra_options(api, "0,1,2,3"));
  ASSERT_TRUE(wait_healthy(kGpu, 4, 1, 4)) << diagnostics(*plugin);
  sim::DraKubeletSim kubelet(work.path(), 34);
  ASSERT_TRUE(kubelet.wait_for_plugin(20s)) << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return published(api).size() == 4; }, 20s)) << diagnostics(*plugin);
  const std::string claimed = *published(api).begin();
  const std::string claimed_uuid = published_uuids(api).at(claimed);
  api.put_resource_claim(claim("uid-1", claimed));
  std::string error = "not prepared";
  auto prepared = [&] {
    auto answer = kubelet.prepare(kDriver, {{"team-a", "train", "uid-1"}});
    error = answer ? answer->at("uid-1").error : answer.error().message;
    return error.empty();
  };
  ASSERT_TRUE(eventually(prepared, 20s)) << error << diagnostics(*plugin);
  // A pod holds one of the device-plugin API's GPUs.
  const std::string pod_held = sim->snapshot().find(kGpu)->device_ids()[0];
  ASSERT_TRUE(sim->run_pod("default", "trainer", kGpu, {pod_held}).ok());

  // The split flips: the configuration gives the claimed GPU to the device-plugin API and the
  // pod's GPU to DRA. Both stay where they are in use.
  plugin->signal(SIGTERM);
  ASSERT_EQ(plugin->wait_exit(10s), 0) << diagnostics(*plugin);
  plugin = start(dra_options(api, "4,5,6,7"));
  ASSERT_TRUE(wait_healthy(kGpu, 4, 2, 4)) << diagnostics(*plugin);  // 0-3 minus the claimed one, plus the pod's
  const auto advertised = sim->snapshot().find(kGpu)->device_ids();
  EXPECT_NE(std::find(advertised.begin(), advertised.end(), pod_held), advertised.end());
  EXPECT_EQ(std::find(advertised.begin(), advertised.end(), claimed_uuid), advertised.end());
  sim::DraKubeletSim restarted(work.path(), 34);
  ASSERT_TRUE(restarted.wait_for_plugin(20s)) << diagnostics(*plugin);
  auto dra_side = [&] {
    auto now = published_uuids(api);
    bool has_claimed = now.count(claimed) > 0;
    bool has_pods = false;
    for (const auto& [name, uuid] : now) has_pods = has_pods || pod_held == uuid;
    return now.size() == 4 && has_claimed && !has_pods;
  };
  EXPECT_TRUE(eventually(dra_side, 20s)) << diagnostics(*plugin);
  const std::string log = plugin->stderr_text();
  EXPECT_NE(log.find("stays with DRA while claim team-a/train (uid-1) holds it; the configuration gives it to the "
                     "device-plugin API"),
            std::string::npos)
      << diagnostics(*plugin);
  EXPECT_NE(log.find("stays with the device-plugin API while pod default/trainer (nvidia.com/gpu " + pod_held +
                     ") holds it; the configuration gives it to DRA"),
            std::string::npos)
      << diagnostics(*plugin);
  // `kgpu devices --live` says the same, from the checkpoint and the kubelet's PodResources.
  ProcessOptions devices;
  devices.argv = {kgpu_binary(), "devices", "--live", "--dra", "--dra-gpus", "4,5,6,7", "--kubelet-socket",
                  plugin_dir + "/kubelet.sock"};
  devices.env = fake_nvml_env(make_fake_node("dgx-a100.yaml", work.file("devices-node")));
  ChildProcess cli(devices, work.path(), "devices");
  (void)cli.wait_exit(30s);
  const std::string shown = cli.stdout_text() + cli.stderr_text();
  EXPECT_NE(shown.find("DRA split: GPU"), std::string::npos) << shown;
  EXPECT_NE(shown.find("stays with DRA while claim team-a/train (uid-1)"), std::string::npos) << shown;
  EXPECT_NE(shown.find("stays with the device-plugin API while pod default/trainer"), std::string::npos) << shown;

  // Released: each GPU goes where the configuration puts it, without a restart.
  auto unprepared = restarted.unprepare(kDriver, {{"team-a", "train", "uid-1"}});
  ASSERT_TRUE(unprepared);
  EXPECT_EQ(unprepared->at("uid-1"), "");
  sim->delete_pod("default", "trainer");
  auto as_configured = [&] {
    auto now = published_uuids(api);
    bool has_pods = false;
    for (const auto& [name, uuid] : now) has_pods = has_pods || pod_held == uuid;
    return now.size() == 4 && !now.count(claimed) && has_pods;
  };
  EXPECT_TRUE(eventually(as_configured, 20s)) << diagnostics(*plugin);
  EXPECT_TRUE(wait_healthy(kGpu, 4, 2, 4)) << diagnostics(*plugin);
  const auto after = sim->snapshot().find(kGpu)->device_ids();
  EXPECT_EQ(std::find(after.begin(), after.end(), pod_held), after.end());
  EXPECT_NE(plugin->stderr_text().find("released, the configuration applies again"), std::string::npos);
}

// Issue 29, item 1: with a plain CDI runtime (containerd 2, CRI-O without NVIDIA's runtime) a DRA
// container gets CUDA only from its claim's spec: the driver's libraries, binaries, firmware and
// the hooks come with it, found as the device-plugin spec finds them and with its hook path.
TEST_F(DraE2E, ClaimSpecsCarryTheDriverFilesAsTheDevicePluginSpecDoes) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  auto options = dra_options(api, "0,1");
  options.extra_args.insert(options.extra_args.end(),
                            {"--container-driver-root", std::string(KGPU_FIXTURES_DIR) + "/driver-root",
                             "--nvidia-ctk-path", "/opt/hooks/nvidia-ctk"});
  auto plugin = start(options);
  sim::DraKubeletSim kubelet(work.path(), 34);
  ASSERT_TRUE(kubelet.wait_for_plugin(20s)) << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return published(api).size() == 2; }, 20s)) << diagnostics(*plugin);
  const std::string device = *published(api).begin();
  api.put_resource_claim(claim("uid-files", device));
  std::string error = "not prepared";
  auto prepared = [&] {  // as the kubelet does, until kgpu knows its devices
    auto answer = kubelet.prepare(kDriver, {{"team-a", "train", "uid-files"}});
    error = answer ? answer->at("uid-files").error : answer.error().message;
    return error.empty();
  };
  ASSERT_TRUE(eventually(prepared, 20s)) << error << diagnostics(*plugin);
  const auto spec = nlohmann::json::parse(read_text(cdi_dir + "/kgpu-k8s.gpu.nvidia.com-claim_uid-files.json"));
  const auto& edits = spec["containerEdits"];
  std::set<std::string> mounted;
  for (const auto& m : edits.value("mounts", nlohmann::json::array())) mounted.insert(m.value("containerPath", ""));
  EXPECT_TRUE(mounted.count("/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15")) << edits.dump(1);
  EXPECT_TRUE(mounted.count("/usr/bin/nvidia-smi")) << edits.dump(1);
  EXPECT_TRUE(mounted.count("/lib/firmware/nvidia/550.54.15/gsp_ga10x.bin")) << edits.dump(1);
  ASSERT_FALSE(edits.value("hooks", nlohmann::json::array()).empty()) << edits.dump(1);
  EXPECT_EQ(edits["hooks"][0].value("path", ""), "/opt/hooks/nvidia-ctk");
  // Still the claim's own GPU for runtimes that read the variable, not the device-plugin spec's
  // "void"; on the device, so only the containers of its request see it.
  const auto& device_edits = spec["devices"][0]["containerEdits"];
  const auto env = device_edits.value("env", nlohmann::json::array());
  EXPECT_NE(std::find(env.begin(), env.end(), "NVIDIA_VISIBLE_DEVICES=" + published_uuids(api).at(device)), env.end())
      << spec.dump(1);
}

// Issue 28, item 10: nvidia-smi fails when a time-sliced claim is unprepared. The claim goes (the
// kubelet is not held up), the reset is kept in the checkpoint, another tenant of that GPU is
// refused until it ran, and it survives a SIGKILL: the restarted kgpu runs it once nvidia-smi works.
TEST_F(DraE2E, AFailedTimeSliceResetIsKeptAndRetriedUntilItRuns) {
  fs::create_directories(cdi_dir);
  const std::string calls = work.file("nvidia-smi.calls");
  const std::string broken = work.file("nvidia-smi.broken");
  // Records each call; fails while `broken` exists (a driver upgrade under way, a wedged GPU).
  const std::string nvidia_smi = work.write(
      "bin/nvidia-smi", "#!/bin/sh\necho \"$@\" >> '" + calls + "'\ntest ! -e '" + broken + "'\n");
  fs::permissions(nvidia_smi, fs::perms::owner_all);
  const std::string checkpoint = work.path() + "/plugins/" + kDriver + "/kgpu-claims.json";
  FakeApiServer api("node-1", {});
  auto options = dra_options(api, "0,1");
  options.extra_args.insert(options.extra_args.end(), {"--dra-nvidia-smi", nvidia_smi});
  auto plugin = start(options);
  sim::DraKubeletSim kubelet(work.path(), 34);
  ASSERT_TRUE(kubelet.wait_for_plugin(20s)) << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return published(api).size() == 2; }, 20s)) << diagnostics(*plugin);
  const auto [device, uuid] = *published_uuids(api).begin();
  const std::string set_default = "-i " + uuid + " -c DEFAULT\n";
  const std::string set_long = set_default + "compute-policy -i " + uuid + " --set-timeslice 3\n";
  const std::string reset = "compute-policy -i " + uuid + " --set-timeslice 0\n";

  api.put_resource_claim(
      claim_with_sharing("uid-ts", device, {{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Long"}}}}));
  auto prepared = kubelet.prepare(kDriver, {{"team-a", "uid-ts", "uid-ts"}});
  ASSERT_TRUE(prepared);
  ASSERT_EQ(prepared->at("uid-ts").error, "") << diagnostics(*plugin);
  std::ofstream(broken) << "";
  auto unprepared = kubelet.unprepare(kDriver, {{"team-a", "uid-ts", "uid-ts"}});
  ASSERT_TRUE(unprepared);
  EXPECT_EQ(unprepared->at("uid-ts"), "") << "the claim is gone; its reset is the checkpoint's now";
  EXPECT_EQ(read_text(calls), set_long + set_default) << "the reset's first step failed";
  EXPECT_NE(read_text(checkpoint).find("pendingGpuResets"), std::string::npos) << read_text(checkpoint);
  EXPECT_NE(plugin->stderr_text().find("a time-slice reset is still pending"), std::string::npos)
      << diagnostics(*plugin);

  // The next tenant of that GPU would inherit interval Long: refused (the kubelet retries).
  auto next = claim("uid-next", device);
  next["metadata"]["name"] = "uid-next";
  api.put_resource_claim(next);
  auto refused = kubelet.prepare(kDriver, {{"team-a", "uid-next", "uid-next"}});
  ASSERT_TRUE(refused);
  EXPECT_NE(refused->at("uid-next").error.find("could not reset yet"), std::string::npos)
      << refused->at("uid-next").error;

  // Killed; nvidia-smi works again: the restarted kgpu runs the reset at start, then serves.
  plugin->signal(SIGKILL);
  (void)plugin->wait_exit(10s);
  fs::remove(broken);
  plugin = start(options);
  EXPECT_TRUE(eventually([&] { return read_text(checkpoint).find("pendingGpuResets") == std::string::npos; },
                         20s))
      << read_text(checkpoint) << diagnostics(*plugin);
  EXPECT_TRUE(read_text(calls).ends_with(reset)) << read_text(calls);
  sim::DraKubeletSim restarted(work.path(), 34);
  ASSERT_TRUE(restarted.wait_for_plugin(20s)) << diagnostics(*plugin);
  std::string last_error;
  auto served = [&] {  // as the kubelet does, until kgpu knows its devices
    auto answer = restarted.prepare(kDriver, {{"team-a", "uid-next", "uid-next"}});
    last_error = answer ? answer->at("uid-next").error : answer.error().message;
    return last_error.empty();
  };
  EXPECT_TRUE(eventually(served, 20s)) << last_error << diagnostics(*plugin);
}

// AMD GPUs (kgpu.dra.vendors: [amd]) are served under AMD's driver name, with their own sockets,
// slices, claims and CDI kind; the device-plugin API keeps none of them. Slices other drivers
// publish for this node (NVIDIA's or Intel's own DRA drivers) are never touched.
TEST_F(DraE2E, AmdGpusUnderTheirOwnDriverNameAndOtherDriversSlicesLeftAlone) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  for (const char* driver : {"gpu.nvidia.com", "gpu.intel.com"}) {
    api.put_slice({{"apiVersion", "resource.k8s.io/v1"},
                   {"kind", "ResourceSlice"},
                   {"metadata", {{"name", std::string("node-1-") + driver + "-theirs"}}},
                   {"spec",
                    {{"driver", driver},
                     {"nodeName", "node-1"},
                     {"pool", {{"name", "node-1"}, {"generation", 1}, {"resourceSliceCount", 1}}},
                     {"devices", nlohmann::json::array()}}}});
  }
  auto plugin = start(sysfs_dra_options(api, "amd-mi210", "amd"));
  sim::DraKubeletSim kubelet(work.path(), 34);
  auto registered = kubelet.wait_for_plugin(20s);
  ASSERT_TRUE(registered) << registered.error().message << "\n" << diagnostics(*plugin);
  EXPECT_EQ(registered->driver, "gpu.amd.com");
  auto amd_devices = [&] { return device_names(api, "gpu.amd.com"); };
  ASSERT_TRUE(eventually([&] { return amd_devices().size() == 2; }, 20s)) << diagnostics(*plugin);
  EXPECT_TRUE(api.slice_rejections().empty());
  EXPECT_EQ(api.slices().count("node-1-gpu.nvidia.com-theirs"), 1u);
  EXPECT_EQ(api.slices().count("node-1-gpu.intel.com-theirs"), 1u);
  EXPECT_EQ(sim->snapshot().find("amd.com/gpu"), nullptr);  // every AMD GPU is DRA's

  auto c = claim("uid-amd", amd_devices()[0]);
  c["status"]["allocation"]["devices"]["results"][0]["driver"] = "gpu.amd.com";
  api.put_resource_claim(c);
  auto prepared = kubelet.prepare("gpu.amd.com", {{"team-a", "train", "uid-amd"}});
  ASSERT_TRUE(prepared) << prepared.error().message;
  const auto& answer = prepared->at("uid-amd");
  ASSERT_EQ(answer.error, "") << diagnostics(*plugin);
  ASSERT_EQ(answer.devices.size(), 1u);
  ASSERT_EQ(answer.devices[0].cdi_device_ids.size(), 1u);
  EXPECT_EQ(answer.devices[0].cdi_device_ids[0].rfind("k8s.gpu.amd.com/claim=uid-amd-", 0), 0u)
      << answer.devices[0].cdi_device_ids[0];
  const std::string spec = cdi_specs();
  EXPECT_NE(spec.find("/dev/kfd"), std::string::npos) << spec;
  EXPECT_NE(spec.find("/dev/dri/renderD"), std::string::npos) << spec;
  auto unprepared = kubelet.unprepare("gpu.amd.com", {{"team-a", "train", "uid-amd"}});
  ASSERT_TRUE(unprepared);
  EXPECT_EQ(unprepared->at("uid-amd"), "");
}

// Intel GPUs (i915 and xe) under Intel's driver name, next to the device-plugin API for nothing else.
TEST_F(DraE2E, IntelGpusAreServedAndPreparedUnderIntelsDriverName) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  auto plugin = start(sysfs_dra_options(api, "intel-flex-arc", "intel"));
  sim::DraKubeletSim kubelet(work.path(), 33);
  auto registered = kubelet.wait_for_plugin(20s);
  ASSERT_TRUE(registered) << registered.error().message << "\n" << diagnostics(*plugin);
  EXPECT_EQ(registered->driver, "gpu.intel.com");
  auto intel_devices = [&] { return device_names(api, "gpu.intel.com"); };
  ASSERT_TRUE(eventually([&] { return intel_devices().size() >= 2; }, 20s)) << diagnostics(*plugin);
  EXPECT_TRUE(api.slice_rejections().empty());
  EXPECT_EQ(sim->snapshot().find("gpu.intel.com/i915"), nullptr);
  EXPECT_EQ(sim->snapshot().find("gpu.intel.com/xe"), nullptr);

  auto c = claim("uid-intel", intel_devices().front());
  c["status"]["allocation"]["devices"]["results"][0]["driver"] = "gpu.intel.com";
  api.put_resource_claim(c);
  auto prepared = kubelet.prepare("gpu.intel.com", {{"team-a", "train", "uid-intel"}});
  ASSERT_TRUE(prepared) << prepared.error().message;
  const auto& answer = prepared->at("uid-intel");
  ASSERT_EQ(answer.error, "") << diagnostics(*plugin);
  ASSERT_EQ(answer.devices.size(), 1u);
  EXPECT_EQ(answer.devices[0].cdi_device_ids.at(0).rfind("k8s.gpu.intel.com/claim=uid-intel-", 0), 0u);
  const std::string spec = cdi_specs();
  EXPECT_NE(spec.find("/dev/dri/"), std::string::npos) << spec;
}

// DRA only (kgpu.dra.devicePlugin false) under a driver name of the operator's choosing: every
// NVIDIA GPU is published under that name and no device-plugin resource is registered.
TEST_F(DraE2E, DraOnlyUnderAnOperatorsDriverName) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  auto options = dra_options(api, "");
  options.extra_args = {"--dra", "--dra-driver", "gpu.example.com", "--cdi-spec-dir", cdi_dir};
  options.env["KGPU_DEVICE_PLUGIN"] = "false";
  auto plugin = start(options);
  sim::DraKubeletSim kubelet(work.path(), 34);
  auto registered = kubelet.wait_for_plugin(20s);
  ASSERT_TRUE(registered) << registered.error().message << "\n" << diagnostics(*plugin);
  EXPECT_EQ(registered->driver, "gpu.example.com");
  ASSERT_TRUE(eventually([&] { return device_names(api, "gpu.example.com").size() == 8; }, 20s))
      << diagnostics(*plugin);
  EXPECT_TRUE(device_names(api, kDriver).empty());
  EXPECT_EQ(sim->snapshot().find(kGpu), nullptr);
  EXPECT_EQ(sim->snapshot().registrations, 0);
}

// DRA alone registers nothing with the device manager, so it needs no device-plugins folder and
// keeps no watch on one (whose inotify close cost 15-25 ms of the exit on a 16-core node, issue
// 32): a node whose kubelet has no such folder is served, and the folder is not created.
TEST_F(DraE2E, DraOnlyNeedsNoDevicePluginsFolder) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  auto options = dra_options(api, "");
  options.extra_args = {"--dra", "--cdi-spec-dir", cdi_dir};
  options.plugin_dir = work.path() + "/no-device-plugins";
  options.env["KGPU_DEVICE_PLUGIN"] = "false";
  auto plugin = start_plugin(options, work.path());  // start() would use the fixture's folder
  sim::DraKubeletSim kubelet(work.path(), 34);
  auto registered = kubelet.wait_for_plugin(20s);
  ASSERT_TRUE(registered) << registered.error().message << "\n" << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return device_names(api, kDriver).size() == 8; }, 20s)) << diagnostics(*plugin);
  EXPECT_FALSE(fs::exists(options.plugin_dir));
  // Still serving (before: the daemon stopped at the missing folder and kgpu exited 1), and a
  // SIGTERM ends it cleanly.
  EXPECT_TRUE(plugin->running()) << diagnostics(*plugin);
  plugin->signal(SIGTERM);
  EXPECT_EQ(plugin->wait_exit(10s), std::optional<int>(0)) << diagnostics(*plugin);
  EXPECT_EQ(plugin->stderr_text().find("device-plugin folder"), std::string::npos) << diagnostics(*plugin);
}

// ---- The Node as the slices' owner, claim reads (issue 26, item 5) ----

// "<kind>/<uid>" of the owner of each of our driver's slices ("" for a slice without one).
std::vector<std::string> owners(const std::map<std::string, nlohmann::json>& slices) {
  std::vector<std::string> out;
  for (const auto& [name, slice] : slices) {
    if (slice["spec"].value("driver", "") != kDriver) continue;
    const auto& refs = slice["metadata"].value("ownerReferences", nlohmann::json::array());
    out.push_back(refs.empty() ? "" : refs[0].value("kind", "") + "/" + refs[0].value("uid", ""));
  }
  return out;
}

// kgpu starts while the API server cannot answer the Node's GET yet (500s): the slices are
// published at once, without an owner; once the Node can be read they are rewritten with the Node
// as owner, so they are garbage-collected with it. (Before: the uid was read once at start-up and
// the slices stayed ownerless for good.)
TEST_F(DraE2E, SlicesGetTheNodeAsOwnerOnceItsUidCanBeRead) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  api.set_fault(FakeApiServer::Fault::Status500);  // the Node's GET; resource.k8s.io is served
  auto plugin = start(dra_options(api, "0,1"));
  ASSERT_TRUE(api.wait_slices([](const auto& slices) { return owners(slices).size() == 1; }, 20s))
      << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return published(api).size() == 2; }, 20s)) << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return api.gets() >= 1; }, 20s));  // it tried
  EXPECT_EQ(owners(api.slices()), std::vector<std::string>{""});

  api.set_fault(FakeApiServer::Fault::None);
  const std::vector<std::string> owned{"Node/" + api.node_uid()};
  EXPECT_TRUE(api.wait_slices([&](const auto& slices) { return owners(slices) == owned; }, 20s))
      << owners(api.slices())[0] << "\n" << diagnostics(*plugin);
  EXPECT_EQ(published(api).size(), 2u);
  EXPECT_TRUE(api.slice_rejections().empty());
}

// A 1.32 cluster serves resource.k8s.io v1beta1 only: each claim is read with one GET in v1beta1,
// the version discovery found for the slices too. (Before: v1, then v1beta2, then v1beta1, for
// every claim.)
TEST_F(DraE2E, ClaimsAreReadInTheVersionDiscoveryFound) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  api.serve_resource_versions({"v1beta1"});
  auto plugin = start(dra_options(api, "0,1"));
  sim::DraKubeletSim kubelet(work.path(), 32);
  auto registered = kubelet.wait_for_plugin(20s);
  ASSERT_TRUE(registered) << registered.error().message << "\n" << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return published(api).size() == 2; }, 20s)) << diagnostics(*plugin);
  const auto names = published(api);
  const std::vector<std::string> devices(names.begin(), names.end());
  for (int i = 0; i < 2; ++i) {
    auto c = claim("uid-" + std::to_string(i), devices[i]);
    c["apiVersion"] = "resource.k8s.io/v1beta1";
    c["metadata"]["name"] = "train-" + std::to_string(i);
    api.put_resource_claim(c);
  }
  auto prepared = kubelet.prepare(kDriver, {{"team-a", "train-0", "uid-0"}, {"team-a", "train-1", "uid-1"}});
  ASSERT_TRUE(prepared) << prepared.error().message;
  EXPECT_EQ(prepared->at("uid-0").error, "") << diagnostics(*plugin);
  EXPECT_EQ(prepared->at("uid-1").error, "") << diagnostics(*plugin);
  EXPECT_EQ(api.claim_reads(), (std::vector<std::string>{"v1beta1", "v1beta1"}));
  EXPECT_EQ(api.slice_counts().discoveries, 1);
}

// ---- DRA mode's lifecycle (issue 32) ----

// The names of the process's threads (/proc/PID/task/*/comm), with their counts.
std::map<std::string, int> thread_names(pid_t pid) {
  std::map<std::string, int> out;
  std::error_code ec;
  for (const auto& task : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    if (std::getline(comm, name)) ++out[name];
  }
  return out;
}

// Both APIs on, slices published and watched, a claim prepared and unprepared: once idle, DRA keeps
// one thread (the slice watch, blocked in its read). The slice writer and the claim worker exist
// only while they have work. (Before: both stayed, and the idle daemon had 8 threads.)
TEST_F(DraE2E, OnceIdleDraKeepsOnlyTheSliceWatchThread) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  auto plugin = start(dra_options(api, "0,1,2,3"));
  ASSERT_TRUE(wait_healthy(kGpu, 4)) << diagnostics(*plugin);
  sim::DraKubeletSim kubelet(work.path(), 34);
  ASSERT_TRUE(kubelet.wait_for_plugin(20s)) << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return published(api).size() == 4; }, 20s)) << diagnostics(*plugin);
  ASSERT_TRUE(api.wait_slice_counts([](const auto& c) { return c.watches >= 1; }, 20s)) << diagnostics(*plugin);
  api.put_resource_claim(claim("uid-1", *published(api).begin()));
  auto prepared = kubelet.prepare(kDriver, {{"team-a", "train", "uid-1"}});
  ASSERT_TRUE(prepared) << prepared.error().message;
  ASSERT_EQ(prepared->at("uid-1").error, "") << diagnostics(*plugin);
  auto unprepared = kubelet.unprepare(kDriver, {{"team-a", "train", "uid-1"}});
  ASSERT_TRUE(unprepared);

  auto idle = [&] {
    auto names = thread_names(plugin->pid());
    return names["kgpu-dra"] == 0 && names["kgpu-dra-slices"] == 0 && names["kgpu-dra-watch"] == 1;
  };
  EXPECT_TRUE(eventually(idle, 20s)) << [&] {
    std::string list;
    for (const auto& [name, n] : thread_names(plugin->pid())) list += name + " x" + std::to_string(n) + ", ";
    return list;
  }() << "\n" << diagnostics(*plugin);
  // A change still reaches the API server: the slice writer starts again for it.
  const int writes = api.slice_counts().writes();
  api.remove_slice(api.slices().begin()->first);
  EXPECT_TRUE(api.wait_slice_counts([&](const auto& c) { return c.writes() > writes; }, 20s)) << diagnostics(*plugin);
  EXPECT_TRUE(eventually([&] { return published(api).size() == 4; }, 20s)) << diagnostics(*plugin);
  plugin->signal(SIGTERM);
  EXPECT_EQ(plugin->wait_exit(10s), 0) << diagnostics(*plugin);
}

// SIGTERM while the API server holds a claim read of a prepare in flight, or a slice write: kgpu
// abandons the request and exits cleanly at once.
TEST_F(DraE2E, SigtermAbandonsAClaimReadOrASliceWriteTheApiServerHolds) {
  fs::create_directories(cdi_dir);
  for (bool claim_read : {true, false}) {
    SCOPED_TRACE(claim_read ? "claim read held" : "slice write held");
    FakeApiServer api("node-1", {});
    auto plugin = start(dra_options(api, "0,1"));
    sim::DraKubeletSim kubelet(work.path(), 34);
    ASSERT_TRUE(kubelet.wait_for_plugin(20s)) << diagnostics(*plugin);
    ASSERT_TRUE(eventually([&] { return published(api).size() == 2; }, 20s)) << diagnostics(*plugin);
    std::thread caller;
    if (claim_read) {
      api.put_resource_claim(claim("uid-1", *published(api).begin()));
      api.stall_claim_reads(true);
      caller = std::thread([&] { (void)kubelet.prepare(kDriver, {{"team-a", "train", "uid-1"}}, 30s); });
      EXPECT_TRUE(api.wait_claim_reads(1, 20s)) << diagnostics(*plugin);
    } else {
      api.stall_slice_writes(true);
      const int writes = api.slice_counts().writes();
      api.remove_slice(api.slices().begin()->first);  // the watch sees it; the re-create is held
      EXPECT_TRUE(api.wait_slice_writes(writes + 1, 20s)) << diagnostics(*plugin);
    }
    const auto t0 = std::chrono::steady_clock::now();
    plugin->signal(SIGTERM);
    EXPECT_EQ(plugin->wait_exit(10s), 0) << diagnostics(*plugin);
    EXPECT_LT(std::chrono::steady_clock::now() - t0, 1s) << diagnostics(*plugin);
    api.stall_claim_reads(false);
    api.stall_slice_writes(false);
    if (caller.joinable()) caller.join();
    EXPECT_FALSE(fs::exists(work.path() + "/plugins_registry/" + kDriver + "-reg.sock"));
  }
}

// `kgpu kubelet-sim --dra` does the same from the command line, for a claim given as a file.
TEST_F(DraE2E, KubeletSimCommandPreparesAndUnpreparesAClaimFile) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  auto plugin = start(dra_options(api, "0"));
  ASSERT_TRUE(eventually([&] { return published(api).size() == 1; }, 20s)) << diagnostics(*plugin);
  auto claim_json = claim("uid-cli", *published(api).begin());
  api.put_resource_claim(claim_json);
  std::string file = work.write("claim.json", claim_json.dump());
  // A second simulator process on the same folders: only its DRA side matters here.
  ProcessOptions p;
  p.argv = {kgpu_binary(), "kubelet-sim", "--dir", work.path() + "/dp-cli", "--dra", "--dra-claim", file,
            "--dra-unprepare", "--once", "--timeout", "20"};
  fs::create_directories(work.path() + "/dp-cli");
  ChildProcess cli(p, work.path(), "kubelet-sim-dra");
  ASSERT_EQ(cli.wait_exit(60s), 0) << cli.stdout_text() << cli.stderr_text() << diagnostics(*plugin);
  std::string out = cli.stdout_text();
  EXPECT_NE(out.find("registered driver gpu.nvidia.com"), std::string::npos) << out;
  EXPECT_NE(out.find("claim uid-cli prepared"), std::string::npos) << out;
  EXPECT_NE(out.find("k8s.gpu.nvidia.com/claim="), std::string::npos) << out;
  EXPECT_NE(out.find("claim uid-cli unprepared"), std::string::npos) << out;
}

}  // namespace
}  // namespace kgpu::test
