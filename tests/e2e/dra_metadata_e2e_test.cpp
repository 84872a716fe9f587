// End to end: device metadata (KEP-5304) with kgpu.dra.deviceMetadata on. Preparing a claim writes
// its document under the plugin's folder and a CDI spec that mounts it where the container looks
// (resourceclaimtemplates/<pod claim name>/... for a claim from a template), the prepare answer
// names that CDI device, a daemon restart keeps them, and unprepare removes both; files of claims
// no longer prepared are removed at start. Off by default: nothing is written.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "e2e/dra_fixture.h"
#include "sim/dra_kubelet_sim.h"
#include "support/eventually.h"
#include "support/fake_api_server.h"

namespace kgpu::test {
namespace {

using namespace std::chrono_literals;
namespace fs = std::filesystem;
const std::string& kDriver = kDraGpuDriver;

class DraMetadataE2E : public DraSimE2E {
 protected:
  PluginOptions metadata_options(const FakeApiServer& api) {
    auto options = dra_options(api, "0,1");
    options.extra_args.push_back("--dra-device-metadata");
    return options;
  }
  std::string document(const std::string& ns, const std::string& name, const std::string& request) const {
    return work.path() + "/plugins/" + kDriver + "/dra-device-metadata/" + ns + "_" + name + "/" + request +
           "/metadata.json";
  }
  std::string spec(const std::string& uid, const std::string& request) const {
    return cdi_dir + "/" + kDriver + "_metadata_" + uid + "_" + request + ".json";
  }
};

TEST_F(DraMetadataE2E, WrittenWithThePreparedClaimKeptAcrossARestartAndRemovedWithIt) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  // Left by a claim unprepared while kgpu was down: removed at start.
  const std::string orphan = spec("uid-gone", "gpu");
  std::ofstream(orphan) << "{}";
  auto plugin = start(metadata_options(api));
  sim::DraKubeletSim kubelet(work.path(), 34);
  auto registered = kubelet.wait_for_plugin(20s);
  ASSERT_TRUE(registered) << registered.error().message << "\n" << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return published(api).size() == 2; }, 20s)) << diagnostics(*plugin);
  EXPECT_FALSE(fs::exists(orphan));
  const auto uuids = published_uuids(api);
  const auto& [device, uuid] = *uuids.begin();

  auto c = claim("uid-m", device, "train-abc12");
  c["metadata"]["annotations"] = {{"resource.kubernetes.io/pod-claim-name", "gpu-claim"}};
  api.put_resource_claim(c);
  auto prepared = kubelet.prepare(kDriver, {{"team-a", "train-abc12", "uid-m"}});
  ASSERT_TRUE(prepared && prepared->at("uid-m").error.empty()) << diagnostics(*plugin);
  const auto& ids = prepared->at("uid-m").devices.at(0).cdi_device_ids;
  EXPECT_NE(std::find(ids.begin(), ids.end(), kDriver + "/metadata=uid-m_gpu"), ids.end());

  auto doc = nlohmann::json::parse(read_text(document("team-a", "train-abc12", "gpu")), nullptr, false);
  ASSERT_TRUE(doc.is_object()) << read_text(document("team-a", "train-abc12", "gpu"));
  EXPECT_EQ(doc["apiVersion"], "metadata.resource.k8s.io/v1alpha1");
  EXPECT_EQ(doc["kind"], "DeviceMetadata");
  EXPECT_EQ(doc["metadata"]["uid"], "uid-m");
  EXPECT_EQ(doc["metadata"]["namespace"], "team-a");
  EXPECT_EQ(doc["podClaimName"], "gpu-claim");
  const auto& d = doc["requests"][0]["devices"][0];
  EXPECT_EQ(doc["requests"][0]["name"], "gpu");
  EXPECT_EQ(d["driver"], kDriver);
  EXPECT_EQ(d["pool"], "node-1");
  EXPECT_EQ(d["name"], device);
  EXPECT_EQ(d["attributes"]["uuid"]["string"], uuid);
  EXPECT_TRUE(d["attributes"].contains("productName")) << d.dump();
  EXPECT_TRUE(d["attributes"]["memoryBytes"]["int"].get<int64_t>() > 0) << d.dump();

  auto cdi = nlohmann::json::parse(read_text(spec("uid-m", "gpu")), nullptr, false);
  ASSERT_TRUE(cdi.is_object());
  EXPECT_EQ(cdi["kind"], kDriver + "/metadata");
  const auto& mount = cdi["devices"][0]["containerEdits"]["mounts"][0];
  EXPECT_EQ(cdi["devices"][0]["name"], "uid-m_gpu");
  EXPECT_EQ(mount["hostPath"], document("team-a", "train-abc12", "gpu"));
  EXPECT_EQ(mount["containerPath"],
            "/var/run/kubernetes.io/dra-device-attributes/resourceclaimtemplates/gpu-claim/gpu/" + kDriver +
                "-metadata.json");

  // A restart between prepare and unprepare: the files stay, the repeated prepare names them again.
  plugin->signal(SIGTERM);
  ASSERT_EQ(plugin->wait_exit(10s), 0) << diagnostics(*plugin);
  auto restarted_plugin = start(metadata_options(api));
  sim::DraKubeletSim restarted(work.path(), 34);
  ASSERT_TRUE(restarted.wait_for_plugin(20s)) << diagnostics(*restarted_plugin);
  EXPECT_TRUE(fs::exists(spec("uid-m", "gpu")));
  auto again = restarted.prepare(kDriver, {{"team-a", "train-abc12", "uid-m"}});
  ASSERT_TRUE(again && again->at("uid-m").error.empty()) << diagnostics(*restarted_plugin);
  EXPECT_EQ(again->at("uid-m").devices.at(0).cdi_device_ids, ids);
  EXPECT_NE(read_text(mount["hostPath"].get<std::string>()).find("gpu-claim"), std::string::npos)
      << "the document written before the restart stays";

  auto unprepared = restarted.unprepare(kDriver, {{"team-a", "train-abc12", "uid-m"}});
  ASSERT_TRUE(unprepared && unprepared->at("uid-m").empty()) << diagnostics(*restarted_plugin);
  EXPECT_FALSE(fs::exists(spec("uid-m", "gpu")));
  EXPECT_FALSE(fs::exists(fs::path(document("team-a", "train-abc12", "gpu")).parent_path().parent_path()));
}

TEST_F(DraMetadataE2E, OffByDefault) {
  fs::create_directories(cdi_dir);
  FakeApiServer api("node-1", {});
  auto plugin = start(dra_options(api, "0,1"));
  sim::DraKubeletSim kubelet(work.path(), 34);
  ASSERT_TRUE(kubelet.wait_for_plugin(20s)) << diagnostics(*plugin);
  ASSERT_TRUE(eventually([&] { return published(api).size() == 2; }, 20s)) << diagnostics(*plugin);
  api.put_resource_claim(claim("uid-n", *published(api).begin()));
  auto prepared = kubelet.prepare(kDriver, {{"team-a", "train", "uid-n"}});
  ASSERT_TRUE(prepared && prepared->at("uid-n").error.empty()) << diagnostics(*plugin);
  for (const auto& id : prepared->at("uid-n").devices.at(0).cdi_device_ids)
    EXPECT_EQ(id.find("/metadata="), std::string::npos) << id;
  EXPECT_FALSE(fs::exists(spec("uid-n", "gpu")));
  EXPECT_FALSE(fs::exists(work.path() + "/plugins/" + kDriver + "/dra-device-metadata"));
}

}  // namespace
}  // namespace kgpu::test
