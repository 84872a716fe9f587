// End to end, issue 31: a GPU shared by memory through DRA consumable capacity, enforced by MPS.
// The real `kgpu plugin --dra` publishes the GPU with allowMultipleAllocations and a memory request
// policy (or whole, on an API server without consumable capacity), and prepares each allocated
// share as an MPS client of the GPU's one control daemon, run by the real `kgpu mps-daemon` with
// the fake nvidia-cuda-mps-control; nvidia-smi is a recording stand-in.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "e2e/dra_fixture.h"
#include "mps/readiness.h"
#include "sim/dra_kubelet_sim.h"
#include "support/eventually.h"
#include "support/fake_api_server.h"
#include "support/mounts.h"

namespace kgpu::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
const std::string& kDriver = kDraGpuDriver;

class DraMemorySharesE2E : public DraSimE2E {
 protected:
  // A claim with one share of `device` that consumed `memory` (a quantity).
  static nlohmann::json share_claim(const std::string& uid, const std::string& device, const std::string& memory) {
    auto c = claim(uid, device, uid);
    auto& result = c["status"]["allocation"]["devices"]["results"][0];
    result["shareID"] = "share-" + uid;
    result["consumedCapacity"] = {{"memory", memory}};
    return c;
  }
  // The published device with allowMultipleAllocations, and its capacity.
  static nlohmann::json shared_device(const FakeApiServer& api) {
    for (const auto& [name, slice] : api.slices())
      for (const auto& d : slice["spec"].value("devices", nlohmann::json::array()))
        if (d.value("allowMultipleAllocations", false)) return d;
    return nullptr;
  }
  std::string nvidia_smi_calls() const { return read_text(work.file("nvidia-smi.calls")); }
  std::string recording_nvidia_smi() {
    const std::string path =
        work.write("bin/nvidia-smi", "#!/bin/sh\necho \"$@\" >> '" + work.file("nvidia-smi.calls") + "'\n");
    fs::permissions(path, fs::perms::owner_all);
    return path;
  }
  // The real `kgpu mps-daemon` with the fake nvidia-cuda-mps-control, 16 MiB of shared memory a daemon.
  static ProcessOptions mps_daemon(const std::string& mps_root) {
    ProcessOptions options;
    options.argv = {kgpu_binary(), "mps-daemon", "--mps-root", mps_root, "--mps-control-binary",
                    std::string(KGPU_FIXTURES_DIR) + "/mps/nvidia-cuda-mps-control", "--claim-shm-size", "16Mi"};
    return options;
  }
  static size_t count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + what.size())) ++n;
    return n;
  }
};

// Three claims of 10, 10 and 20 GiB on one 40 GiB A100 become three MPS clients of the GPU's one
// daemon, each with its own memory limit; a fourth share and a whole claim are refused; a restart
// keeps the daemon and the limits; the last unprepare quits the daemon and restores the compute
// mode.
TEST_F(DraMemorySharesE2E, ThreeSharesFillAGpuAndTheLastUnprepareRestoresIt) {
  if (!can_mount_tmpfs()) GTEST_SKIP() << kNoMountsReason;
  fs::create_directories(cdi_dir);
  const std::string nvidia_smi = recording_nvidia_smi();
  const std::string mps_root = work.file("mps");
  const ProcessOptions supervisor_options = mps_daemon(mps_root);
  ChildProcess supervisor(supervisor_options, work.path(), "mps-daemon");
  FakeApiServer api("node-1", {});
  api.set_consumable_capacity(FakeApiServer::ConsumableCapacity::Served);
  auto options = share_options(api, "0,1", "0", mps_root);
  options.extra_args.insert(options.extra_args.end(), {"--dra-nvidia-smi", nvidia_smi});
  auto plugin = start(options);
  sim::DraKubeletSim kubelet(work.path(), 34);
  ASSERT_TRUE(kubelet.wait_for_plugin(20s)) << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return !shared_device(api).is_null(); }, 20s)) << diagnostics(*plugin);
  const nlohmann::json device = shared_device(api);
  const std::string name = device["name"];
  const std::string uuid = device["attributes"]["uuid"]["string"];
  EXPECT_EQ(device["capacity"]["memory"]["value"], "40Gi");
  EXPECT_EQ(device["capacity"]["memory"]["requestPolicy"]["validRange"]["step"], "1Gi");
  EXPECT_EQ(published(api).size(), 2u);  // GPU 1 stays whole
  EXPECT_TRUE(api.slice_rejections().empty());

  api.put_resource_claim(share_claim("uid-a", name, "10Gi"));
  api.put_resource_claim(share_claim("uid-b", name, "10Gi"));
  api.put_resource_claim(share_claim("uid-c", name, "20Gi"));
  const std::vector<sim::DraClaim> three = {
      {"team-a", "uid-a", "uid-a"}, {"team-a", "uid-b", "uid-b"}, {"team-a", "uid-c", "uid-c"}};
  auto prepared = kubelet.prepare(kDriver, three);
  ASSERT_TRUE(prepared) << prepared.error().message;
  for (const auto& c : three) EXPECT_EQ(prepared->at(c.uid).error, "") << c.uid << diagnostics(*plugin);

  // One daemon for the GPU, on that GPU only; the GPU runs EXCLUSIVE_PROCESS, set once.
  const std::string daemon_dir = mps_root + "/dra/gpushare-" + uuid;
  EXPECT_TRUE(mps_marker_live(daemon_dir + "/.ready")) << supervisor.stderr_text();
  const std::string daemon_log = read_text(daemon_dir + "/log/fake-control.log");
  EXPECT_NE(daemon_log.find("visible " + uuid + "\n"), std::string::npos) << daemon_log;
  EXPECT_EQ(count(nvidia_smi_calls(), "-i " + uuid + " -c EXCLUSIVE_PROCESS"), 1u) << nvidia_smi_calls();
  // Each client gets its own limit, the daemon's pipe and shared memory.
  auto spec_of = [&](const std::string& uid) {
    return read_text(cdi_dir + "/kgpu-k8s.gpu.nvidia.com-claim_" + uid + ".json");
  };
  EXPECT_NE(spec_of("uid-a").find("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=" + uuid + "=10240M"), std::string::npos)
      << spec_of("uid-a");
  EXPECT_NE(spec_of("uid-c").find("CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=" + uuid + "=20480M"), std::string::npos);
  EXPECT_NE(spec_of("uid-b").find("CUDA_MPS_PIPE_DIRECTORY=/mps/dra/gpushare-" + uuid + "/pipe"), std::string::npos);
  EXPECT_NE(spec_of("uid-b").find("\"hostPath\": \"" + daemon_dir + "/shm\""), std::string::npos);

  // The GPU's 40 GiB are taken: a fourth share is refused by name, and so is a claim for the
  // whole GPU (it would take the GPU from under the shares).
  api.put_resource_claim(share_claim("uid-d", name, "1Gi"));
  api.put_resource_claim(claim("uid-whole", name, "uid-whole"));
  auto refused = kubelet.prepare(kDriver, {{"team-a", "uid-d", "uid-d"}, {"team-a", "uid-whole", "uid-whole"}});
  ASSERT_TRUE(refused) << refused.error().message;
  EXPECT_NE(refused->at("uid-d").error.find("cannot take this claim's 1Gi memory share: 40Gi of it is held by the "
                                            "shares prepared for"),
            std::string::npos)
      << refused->at("uid-d").error;
  EXPECT_NE(refused->at("uid-whole").error.find("allocated without a shareID"), std::string::npos)
      << refused->at("uid-whole").error;

  // kgpu restarts: the shares, their limits and the daemon stay.
  plugin->signal(SIGTERM);
  ASSERT_EQ(plugin->wait_exit(20s), 0) << diagnostics(*plugin);
  plugin = start(options);
  sim::DraKubeletSim restarted(work.path(), 34);
  ASSERT_TRUE(restarted.wait_for_plugin(20s)) << diagnostics(*plugin);
  EXPECT_TRUE(mps_marker_live(daemon_dir + "/.ready")) << supervisor.stderr_text();
  // (Asked again, as the kubelet does, until kgpu knows its devices.)
  std::string error;
  auto still_full = [&] {
    auto again = restarted.prepare(kDriver, {{"team-a", "uid-d", "uid-d"}});
    error = again ? again->at("uid-d").error : again.error().message;
    return error.find("40Gi of it is held") != std::string::npos;
  };
  EXPECT_TRUE(eventually(still_full, 20s)) << error;

  // Unprepared one by one: the daemon stays while any share is left, then quits, and the GPU goes
  // back to compute mode DEFAULT.
  for (const char* uid : {"uid-a", "uid-b"}) {
    auto answer = restarted.unprepare(kDriver, {{"team-a", uid, uid}});
    ASSERT_TRUE(answer && answer->at(uid).empty()) << diagnostics(*plugin);
  }
  EXPECT_TRUE(mps_marker_live(daemon_dir + "/.ready"));
  EXPECT_EQ(count(nvidia_smi_calls(), "-i " + uuid + " -c DEFAULT"), 0u) << nvidia_smi_calls();
  auto last = restarted.unprepare(kDriver, {{"team-a", "uid-c", "uid-c"}});
  ASSERT_TRUE(last && last->at("uid-c").empty()) << diagnostics(*plugin);
  EXPECT_TRUE(eventually([&] { return !fs::exists(daemon_dir); }, 20s)) << supervisor.stderr_text();
  EXPECT_EQ(count(nvidia_smi_calls(), "-i " + uuid + " -c DEFAULT"), 1u) << nvidia_smi_calls();
  supervisor.signal(SIGTERM);
  EXPECT_EQ(supervisor.wait_exit(20s), 0) << supervisor.stderr_text();
}

// The GPU's MPS daemon goes away under its shares (its supervisor killed): the GPU is published
// with the taint gpu.nvidia.com/mps-daemon, so no new share lands on it, until the supervisor is
// back and the daemon ready again.
TEST_F(DraMemorySharesE2E, ADeadShareDaemonTaintsItsGpuUntilItIsBack) {
  if (!can_mount_tmpfs()) GTEST_SKIP() << kNoMountsReason;
  fs::create_directories(cdi_dir);
  const std::string mps_root = work.file("mps");
  const ProcessOptions supervisor_options = mps_daemon(mps_root);
  auto supervisor = std::make_unique<ChildProcess>(supervisor_options, work.path(), "mps-daemon");
  FakeApiServer api("node-1", {});
  api.set_consumable_capacity(FakeApiServer::ConsumableCapacity::Served);
  api.set_device_taints(FakeApiServer::DeviceTaints::Served);
  auto options = share_options(api, "0", "0", mps_root);
  options.extra_args.insert(options.extra_args.end(), {"--dra-nvidia-smi", recording_nvidia_smi()});
  auto plugin = start(options);
  sim::DraKubeletSim kubelet(work.path(), 34);
  ASSERT_TRUE(kubelet.wait_for_plugin(20s)) << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return !shared_device(api).is_null(); }, 20s)) << diagnostics(*plugin);
  const std::string name = shared_device(api)["name"];
  api.put_resource_claim(share_claim("uid-a", name, "10Gi"));
  auto prepared = kubelet.prepare(kDriver, {{"team-a", "uid-a", "uid-a"}});
  ASSERT_TRUE(prepared && prepared->at("uid-a").error.empty()) << diagnostics(*plugin);
  auto taint_keys = [&] {
    std::set<std::string> keys;
    for (const auto& t : shared_device(api).value("taints", nlohmann::json::array())) keys.insert(t.value("key", ""));
    return keys;
  };
  const std::set<std::string> down{"gpu.nvidia.com/mps-daemon"};
  EXPECT_TRUE(taint_keys().empty());

  supervisor->signal(SIGKILL);
  ASSERT_TRUE(supervisor->wait_exit(20s).has_value());
  EXPECT_TRUE(eventually([&] { return taint_keys() == down; }, 20s)) << diagnostics(*plugin);
  EXPECT_NE(plugin->stderr_text().find("is not ready; its memory shares have no daemon"), std::string::npos);

  supervisor = std::make_unique<ChildProcess>(supervisor_options, work.path(), "mps-daemon-2");
  EXPECT_TRUE(eventually([&] { return !shared_device(api).is_null() && taint_keys().empty(); }, 20s))
      << diagnostics(*plugin) << supervisor->stderr_text();
  auto unprepared = kubelet.unprepare(kDriver, {{"team-a", "uid-a", "uid-a"}});
  EXPECT_TRUE(unprepared && unprepared->at("uid-a").empty()) << diagnostics(*plugin);
  supervisor->signal(SIGTERM);
  EXPECT_EQ(supervisor->wait_exit(20s), 0) << supervisor->stderr_text();
}

// An API server without consumable capacity (DRAConsumableCapacity off: the fields are dropped):
// kgpu says so once and publishes the GPU whole, and a claim allocated it whole is prepared.
TEST_F(DraMemorySharesE2E, WithoutConsumableCapacityTheGpuIsPublishedWhole) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  api.set_consumable_capacity(FakeApiServer::ConsumableCapacity::Stripped);
  auto options = share_options(api, "0,1", "all");
  auto plugin = start(options);
  sim::DraKubeletSim kubelet(work.path(), 34);
  ASSERT_TRUE(kubelet.wait_for_plugin(20s)) << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return plugin->stderr_text().find("published whole") != std::string::npos; }, 20s))
      << diagnostics(*plugin);
  EXPECT_EQ(count(plugin->stderr_text(), "without allowMultipleAllocations"), 1u) << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return published(api).size() == 2; }, 20s)) << diagnostics(*plugin);
  EXPECT_TRUE(shared_device(api).is_null());
  for (const auto& [slice_name, slice] : api.slices())
    for (const auto& d : slice["spec"]["devices"])
      EXPECT_FALSE(d["capacity"]["memory"].contains("requestPolicy")) << d.dump();

  const std::string gpu = *published(api).begin();
  api.put_resource_claim(claim("uid-whole", gpu));
  std::string error = "not prepared";
  auto prepared = [&] {
    auto answer = kubelet.prepare(kDriver, {{"team-a", "train", "uid-whole"}});
    error = answer ? answer->at("uid-whole").error : answer.error().message;
    return error.empty();
  };
  EXPECT_TRUE(eventually(prepared, 20s)) << error << diagnostics(*plugin);
}

}  // namespace
}  // namespace kgpu::test
