// Device metadata documents and their CDI specs (KEP-5304), as the Go helper lays them out, and the
// annotation that picks the container path of a claim made from a template.
#include "dra/health/device_metadata.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "dra/health/pod_claim_name.h"

namespace kgpu::dra::health {
namespace {

const MetadataLayout kLayout{"gpu.nvidia.com", "/var/lib/kubelet/plugins/gpu.nvidia.com", "/var/run/cdi"};

PreparedClaim claim_on(std::vector<PreparedDevice> devices) {
  PreparedClaim c;
  c.ref = {"uid-1", "team-a", "train"};
  c.driver = "gpu.nvidia.com";
  c.devices = std::move(devices);
  return c;
}

PreparedDevice device(std::string name, std::vector<std::string> requests) {
  PreparedDevice d;
  d.requests = std::move(requests);
  d.pool = "node-1";
  d.device = std::move(name);
  d.cdi_device_ids = {"k8s.gpu.nvidia.com/claim=uid-1-" + d.device};
  return d;
}

TEST(DeviceMetadata, OneDocumentAndSpecPerRequestWhereTheGoHelperPutsThem) {
  DriverPool pool{"gpu.nvidia.com", "node-1", {}};
  DraDevice published{"gpu-0", nullptr, {{"productName", std::string("A100")}, {"uuid", std::string("GPU-a")}},
                      {{"memory", uint64_t{40} << 30}}};
  pool.devices.push_back(published);
  auto files = claim_metadata(kLayout, claim_on({device("gpu-0", {"gpu"}), device("gpu-1", {"extra"})}), std::nullopt,
                              pool, Inventory{});
  ASSERT_EQ(files.size(), 2u);
  EXPECT_EQ(files[0].request, "extra");
  const auto& f = files[1];
  EXPECT_EQ(f.metadata_path, "/var/lib/kubelet/plugins/gpu.nvidia.com/dra-device-metadata/team-a_train/gpu/metadata.json");
  EXPECT_EQ(f.cdi_path, "/var/run/cdi/gpu.nvidia.com_metadata_uid-1_gpu.json");
  EXPECT_EQ(f.cdi_device_id, "gpu.nvidia.com/metadata=uid-1_gpu");
  auto doc = nlohmann::json::parse(f.metadata_text);
  EXPECT_EQ(doc["apiVersion"], "metadata.resource.k8s.io/v1alpha1");
  EXPECT_EQ(doc["metadata"]["generation"], 1);
  EXPECT_FALSE(doc.contains("podClaimName"));
  const auto& d = doc["requests"][0]["devices"][0];
  EXPECT_EQ(d["attributes"]["uuid"]["string"], "GPU-a");
  EXPECT_EQ(d["attributes"]["productName"]["string"], "A100");
  EXPECT_EQ(d["attributes"]["memoryBytes"]["int"], uint64_t{40} << 30);
  auto spec = nlohmann::json::parse(f.cdi_text);
  EXPECT_EQ(spec["kind"], "gpu.nvidia.com/metadata");
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["mounts"][0]["containerPath"],
            "/var/run/kubernetes.io/dra-device-attributes/resourceclaims/train/gpu/gpu.nvidia.com-metadata.json");
  EXPECT_EQ(spec["devices"][0]["containerEdits"]["mounts"][0]["options"], nlohmann::json({"ro", "bind"}));
  // A device the pool no longer has (a recovered claim) is listed by name only.
  EXPECT_FALSE(nlohmann::json::parse(files[0].metadata_text)["requests"][0]["devices"][0].contains("attributes"));
}

TEST(DeviceMetadata, MigPlacementMemoryShareAndMpsPipe) {
  Inventory inv;
  Gpu g;
  g.uuid = "GPU-b";
  MigDevice m;
  m.uuid = "MIG-b1";
  m.placement_start = 4;
  m.placement_size = 2;
  g.mig_devices = {m};
  inv.gpus = {g};
  DriverPool pool{"gpu.nvidia.com", "node-1", {}};
  pool.devices.push_back(DraDevice{"gpu-1-mig-1", nullptr, {{"uuid", std::string("MIG-b1")}}, {}});
  pool.devices.push_back(DraDevice{"gpu-0", nullptr, {{"uuid", std::string("GPU-a")}}, {}});
  auto c = claim_on({device("gpu-1-mig-1", {"mig"}), device("gpu-0", {"share"})});
  c.shares.push_back(GpuShare{"gpu-0", "GPU-a", uint64_t{4} << 30, std::nullopt, std::nullopt});
  auto files = claim_metadata(kLayout, c, std::string("my-gpu"), pool, inv);
  ASSERT_EQ(files.size(), 2u);
  auto mig = nlohmann::json::parse(files[0].metadata_text);
  EXPECT_EQ(mig["podClaimName"], "my-gpu");
  EXPECT_EQ(mig["requests"][0]["devices"][0]["attributes"]["placementStart"]["int"], 4);
  EXPECT_EQ(mig["requests"][0]["devices"][0]["attributes"]["placementSize"]["int"], 2);
  auto share = nlohmann::json::parse(files[1].metadata_text)["requests"][0]["devices"][0]["attributes"];
  EXPECT_EQ(share["memoryShareBytes"]["int"], uint64_t{4} << 30);
  EXPECT_EQ(share["mpsPipeDirectory"]["string"], "/mps/dra/gpushare-GPU-a/pipe");
  EXPECT_NE(files[1].cdi_text.find("/resourceclaimtemplates/my-gpu/share/gpu.nvidia.com-metadata.json"),
            std::string::npos);
}

TEST(DeviceMetadata, NamesThatWouldLeaveTheFolderGetNoFile) {
  DriverPool pool{"gpu.nvidia.com", "node-1", {}};
  auto c = claim_on({device("gpu-0", {"../x"})});
  EXPECT_TRUE(claim_metadata(kLayout, c, std::nullopt, pool, {}).empty());
  c = claim_on({device("gpu-0", {"gpu"})});
  c.ref.name = "../../etc";
  EXPECT_TRUE(claim_metadata(kLayout, c, std::nullopt, pool, {}).empty());
}

TEST(DeviceMetadata, InvalidUtf8FromTheDriverIsReplacedNotThrown) {
  DriverPool pool{"gpu.nvidia.com", "node-1", {}};
  pool.devices.push_back(DraDevice{"gpu-0", nullptr, {{"productName", std::string("A100\xff\xfe")}}, {}});
  auto files = claim_metadata(kLayout, claim_on({device("gpu-0", {"gpu"})}), std::nullopt, pool, {});
  ASSERT_EQ(files.size(), 1u);
  EXPECT_TRUE(nlohmann::json::accept(files[0].metadata_text));
}

TEST(DeviceMetadata, TheCdiDeviceGoesToTheFirstDeviceOfEachRequestOnce) {
  auto c = claim_on({device("gpu-0", {"gpu"}), device("gpu-1", {"gpu"})});
  auto files = claim_metadata(kLayout, c, std::nullopt, DriverPool{}, {});
  auto devices = with_metadata_devices(c.devices, files);
  EXPECT_EQ(devices[0].cdi_device_ids.back(), "gpu.nvidia.com/metadata=uid-1_gpu");
  EXPECT_EQ(devices[1].cdi_device_ids.size(), 1u);
  EXPECT_EQ(with_metadata_devices(devices, files), devices);  // a repeated prepare: the same answer
}

TEST(PodClaimName, TheAnnotationOrNothingAndErrorsForBadValues) {
  EXPECT_EQ(*pod_claim_name(R"({"metadata":{"name":"x"}})"), std::nullopt);
  EXPECT_EQ(*pod_claim_name(R"({"metadata":{"annotations":{"resource.kubernetes.io/pod-claim-name":"gpu"}}})"),
            std::optional<std::string>("gpu"));
  EXPECT_FALSE(pod_claim_name("not json"));
  EXPECT_FALSE(pod_claim_name("[]"));
  EXPECT_FALSE(pod_claim_name(R"({"metadata":{"annotations":[]}})"));
  EXPECT_FALSE(pod_claim_name(R"({"metadata":{"annotations":{"resource.kubernetes.io/pod-claim-name":3}}})"));
  EXPECT_FALSE(pod_claim_name(R"({"metadata":{"annotations":{"resource.kubernetes.io/pod-claim-name":"../x"}}})"));
  EXPECT_FALSE(pod_claim_name(std::string(100000, '[')));
}

}  // namespace
}  // namespace kgpu::dra::health
