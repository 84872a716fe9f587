// End to end, issue 29 item 10: `kgpu plugin --dra` taking over a node from NVIDIA's DRA driver.
// A claim NVIDIA's driver prepared (its checkpoint.json in the plugin folder, its per-claim CDI
// spec) is adopted at start: the kubelet's repeated prepare gets NVIDIA's answer without kgpu
// reading the claim, another claim on that GPU is refused, and the kubelet's unprepare removes
// NVIDIA's spec and frees the GPU.
#include <gtest/gtest.h>
#include <signal.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>

#include <nlohmann/json.hpp>

#include "e2e/dra_fixture.h"
#include "sim/dra_kubelet_sim.h"
#include "support/eventually.h"
#include "support/fake_api_server.h"

namespace kgpu::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
const std::string kGpu = "nvidia.com/gpu";
const std::string& kDriver = kDraGpuDriver;
const std::string kAdopted = "5a1e0b7c-0000-4000-8000-00000000ad0b";

class DraAdoptE2E : public DraSimE2E {
 protected:
  // NVIDIA's checkpoint as its v25.12 driver writes it: the claim completed (v2 without name and
  // namespace, as that driver leaves completed entries) and its v1 copy.
  void write_nvidia_claim(const std::string& device, const std::string& uuid) {
    const nlohmann::json kubelet_device = {{"Requests", {"gpu"}},
                                           {"PoolName", "node-1"},
                                           {"DeviceName", device},
                                           {"CDIDeviceIDs", {cdi_id(device)}}};
    const nlohmann::json devices = {
        {{"devices", {{{"gpu", {{"info", {{"uuid", uuid}}}, {"device", kubelet_device}}}, {"mig", nullptr}}}},
         {"configState", {{"mpsControlDaemonID", ""}}}}};
    const nlohmann::json status = claim(kAdopted, device, "nvidia-era")["status"];
    const nlohmann::json file = {
        {"checksum", 3141592653u},
        {"v1", {{"preparedClaims", {{kAdopted, {{"status", status}, {"preparedDevices", devices}}}}}}},
        {"v2",
         {{"checksum", 2718281828u},
          {"preparedClaims",
           {{kAdopted,
             {{"checkpointState", "PrepareCompleted"}, {"status", status}, {"preparedDevices", devices}}}}}}}};
    fs::create_directories(plugin_folder());
    std::ofstream(nvidia_checkpoint()) << file.dump();
    std::ofstream(nvidia_spec()) << "---\ncdiVersion: 0.5.0\nkind: k8s.gpu.nvidia.com/claim\ndevices:\n- name: " +
                                        kAdopted + "-" + device + "\n  containerEdits:\n    deviceNodes:\n    - path: "
                                                                  "/dev/nvidia0\n";
  }
  static std::string cdi_id(const std::string& device) { return "k8s.gpu.nvidia.com/claim=" + kAdopted + "-" + device; }
  std::string plugin_folder() const { return work.path() + "/plugins/" + kDriver; }
  std::string nvidia_checkpoint() const { return plugin_folder() + "/checkpoint.json"; }
  std::string nvidia_spec() const { return cdi_dir + "/k8s.gpu.nvidia.com-claim_" + kAdopted + ".yaml"; }
};

TEST_F(DraAdoptE2E, ClaimsNvidiasDriverPreparedAreHeldAnsweredAndUnprepared) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  // A first start only to learn which GPUs DRA publishes, and their UUIDs.
  auto plugin = start(dra_options(api, "0,1"));
  ASSERT_TRUE(eventually([&] { return published_uuids(api).size() == 2; }, 20s)) << diagnostics(*plugin);
  const auto [device, uuid] = *published_uuids(api).begin();
  plugin->signal(SIGTERM);
  ASSERT_EQ(plugin->wait_exit(10s), 0) << diagnostics(*plugin);

  // NVIDIA's driver ran here and prepared `device` for a pod that still runs.
  write_nvidia_claim(device, uuid);
  plugin = start(dra_options(api, "0,1"));
  ASSERT_TRUE(wait_healthy(kGpu, 6)) << diagnostics(*plugin);
  sim::DraKubeletSim kubelet(work.path(), 34);
  ASSERT_TRUE(kubelet.wait_for_plugin(20s)) << diagnostics(*plugin);
  EXPECT_NE(plugin->stderr_text().find("took over claim " + kAdopted), std::string::npos) << diagnostics(*plugin);
  EXPECT_FALSE(fs::exists(nvidia_checkpoint()));
  size_t renamed = 0;
  for (const auto& e : fs::directory_iterator(plugin_folder()))
    renamed += e.path().filename().string().starts_with("checkpoint.json.adopted-by-kgpu-");
  EXPECT_EQ(renamed, 1u);

  // A new claim on that GPU is refused (retried as the kubelet does, until kgpu knows its devices).
  api.put_resource_claim(claim("uid-new", device, "new"));
  std::string last_error;
  auto refused_as_held = [&] {
    auto answer = kubelet.prepare(kDriver, {{"team-a", "new", "uid-new"}});
    last_error = answer ? answer->at("uid-new").error : answer.error().message;
    return last_error.find("already prepared") != std::string::npos;
  };
  ASSERT_TRUE(eventually(refused_as_held, 20s)) << last_error << "\n" << diagnostics(*plugin);
  EXPECT_NE(last_error.find(kAdopted), std::string::npos) << last_error;

  // The kubelet's repeated prepare of the adopted claim (not in the API server: never read) gets
  // the answer NVIDIA's driver gave.
  auto repeated = kubelet.prepare(kDriver, {{"team-a", "nvidia-era", kAdopted}});
  ASSERT_TRUE(repeated) << repeated.error().message;
  const auto& answer = repeated->at(kAdopted);
  ASSERT_EQ(answer.error, "") << diagnostics(*plugin);
  ASSERT_EQ(answer.devices.size(), 1u);
  EXPECT_EQ(answer.devices[0].device, device);
  EXPECT_EQ(answer.devices[0].pool, "node-1");
  EXPECT_EQ(answer.devices[0].cdi_device_ids, std::vector<std::string>{cdi_id(device)});

  // Still held after a restart (kgpu's own checkpoint has it now).
  plugin->signal(SIGTERM);
  ASSERT_EQ(plugin->wait_exit(10s), 0) << diagnostics(*plugin);
  plugin = start(dra_options(api, "0,1"));
  sim::DraKubeletSim restarted(work.path(), 34);
  ASSERT_TRUE(restarted.wait_for_plugin(20s)) << diagnostics(*plugin);
  auto again_refused = [&] {
    auto a = restarted.prepare(kDriver, {{"team-a", "new", "uid-new"}});
    last_error = a ? a->at("uid-new").error : a.error().message;
    return last_error.find("already prepared") != std::string::npos;
  };
  ASSERT_TRUE(eventually(again_refused, 20s)) << last_error << "\n" << diagnostics(*plugin);
  EXPECT_EQ(plugin->stderr_text().find("took over claim"), std::string::npos) << "adopted once only";

  // The pod ends: the kubelet's unprepare removes NVIDIA's spec and frees the GPU.
  ASSERT_TRUE(fs::exists(nvidia_spec()));
  auto unprepared = restarted.unprepare(kDriver, {{"team-a", "nvidia-era", kAdopted}});
  ASSERT_TRUE(unprepared) << unprepared.error().message;
  EXPECT_EQ(unprepared->at(kAdopted), "");
  EXPECT_FALSE(fs::exists(nvidia_spec()));
  auto prepared = restarted.prepare(kDriver, {{"team-a", "new", "uid-new"}});
  ASSERT_TRUE(prepared) << prepared.error().message;
  ASSERT_EQ(prepared->at("uid-new").error, "") << diagnostics(*plugin);
  EXPECT_EQ(prepared->at("uid-new").devices.at(0).device, device);

  plugin->signal(SIGTERM);
  EXPECT_EQ(plugin->wait_exit(10s), 0) << diagnostics(*plugin);
}

// Issue 38, item 1: whatever NVIDIA's checkpoint.json holds (cut short, one bad claim entry among
// good ones, a symlink, only a newer version's section), the GPU NVIDIA's per-claim CDI spec gives
// a running pod is refused to another claim until the kubelet unprepares that claim. Today's main
// prepared it for the other claim in all four cases.
TEST_F(DraAdoptE2E, WhateverNvidiasCheckpointHoldsTheGpuItsSpecGivesIsNeverHandedOutTwice) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  auto plugin = start(dra_options(api, "0,1"));
  ASSERT_TRUE(eventually([&] { return published_uuids(api).size() == 2; }, 20s)) << diagnostics(*plugin);
  const auto [device, uuid] = *published_uuids(api).begin();
  const auto [other_device, other_uuid] = *published_uuids(api).rbegin();
  plugin->signal(SIGTERM);
  ASSERT_EQ(plugin->wait_exit(10s), 0) << diagnostics(*plugin);

  const std::string kGood = "5a1e0b7c-0000-4000-8000-00000000900d";
  const std::map<std::string, std::function<void()>> cases = {
      {"truncated",
       [&] {
         const std::string text = read_text(nvidia_checkpoint());
         std::ofstream(nvidia_checkpoint(), std::ios::trunc) << text.substr(0, text.size() / 2);
       }},
      {"one bad entry among good ones",
       [&] {
         auto file = nlohmann::json::parse(read_text(nvidia_checkpoint()));
         for (const std::string section : {"v1", "v2"}) {
           auto& claims = file[section]["preparedClaims"];
           nlohmann::json good = claims[kAdopted];
           good["preparedDevices"][0]["devices"][0]["gpu"]["info"]["uuid"] = other_uuid;
           good["preparedDevices"][0]["devices"][0]["gpu"]["device"]["DeviceName"] = other_device;
           claims[kGood] = good;
           claims[kAdopted]["status"]["reservedFor"] = {"pod"};
         }
         std::ofstream(nvidia_checkpoint(), std::ios::trunc) << file.dump();
       }},
      {"a symlink",
       [&] {
         fs::rename(nvidia_checkpoint(), work.file("elsewhere.json"));
         fs::create_symlink(work.file("elsewhere.json"), nvidia_checkpoint());
       }},
      {"v3 only",
       [&] {
         std::ofstream(nvidia_checkpoint(), std::ios::trunc)
             << nlohmann::json{{"checksum", 1}, {"v3", {{"preparedClaims", {{kAdopted, 1}}}}}}.dump();
       }},
  };
  int round = 0;
  for (const auto& [name, spoil] : cases) {
    SCOPED_TRACE(name);
    write_nvidia_claim(device, uuid);
    spoil();
    plugin = start(dra_options(api, "0,1"));
    sim::DraKubeletSim kubelet(work.path(), 34);
    ASSERT_TRUE(kubelet.wait_for_plugin(20s)) << diagnostics(*plugin);
    const std::string other = "uid-other-" + std::to_string(++round);
    api.put_resource_claim(claim(other, device, "other-" + std::to_string(round)));
    std::string last_error;
    auto refused = [&] {
      auto answer = kubelet.prepare(kDriver, {{"team-a", "other-" + std::to_string(round), other}});
      last_error = answer ? answer->at(other).error : answer.error().message;
      return last_error.find(kAdopted) != std::string::npos;
    };
    ASSERT_TRUE(eventually(refused, 20s)) << last_error << "\n" << diagnostics(*plugin);
    if (name == "one bad entry among good ones") {  // the good entry is taken over
      EXPECT_NE(plugin->stderr_text().find("took over claim " + kGood), std::string::npos) << diagnostics(*plugin);
    }
    // The pod NVIDIA's driver served ends: the GPU is free.
    auto unprepared = kubelet.unprepare(kDriver, {{"team-a", "nvidia-era", kAdopted}});
    ASSERT_TRUE(unprepared) << unprepared.error().message;
    EXPECT_FALSE(fs::exists(nvidia_spec()));
    auto prepared = kubelet.prepare(kDriver, {{"team-a", "other-" + std::to_string(round), other}});
    ASSERT_TRUE(prepared) << prepared.error().message;
    EXPECT_EQ(prepared->at(other).error, "") << diagnostics(*plugin);
    // Clean up for the next case: this round's claims go, and so does NVIDIA's file.
    ASSERT_TRUE(kubelet.unprepare(kDriver, {{"team-a", "other-" + std::to_string(round), other}}));
    ASSERT_TRUE(kubelet.unprepare(kDriver, {{"team-a", "good", kGood}}));
    plugin->signal(SIGTERM);
    ASSERT_EQ(plugin->wait_exit(10s), 0) << diagnostics(*plugin);
    for (const auto& e : fs::directory_iterator(plugin_folder()))
      if (e.path().filename().string().starts_with("checkpoint.json")) fs::remove(e.path());
    fs::remove(work.file("elsewhere.json"));
  }
}

}  // namespace
}  // namespace kgpu::test
