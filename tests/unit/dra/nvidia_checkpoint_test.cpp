// NVIDIA's DRA driver's checkpoint, as kgpu reads it to take over the claims that driver prepared:
// the v1 (v25.3) and v2 (v25.8+) sections, the device kinds of each release, Go's key matching,
// and clear errors for what does not parse.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "dra/claims/nvidia_checkpoint.h"

namespace kgpu::dra {
namespace {

using nlohmann::json;

const std::string kDriver = "gpu.nvidia.com";
const std::string kUid1 = "0d9a4c5e-1111-4a3b-8c2d-000000000001";
const std::string kUid2 = "0d9a4c5e-2222-4a3b-8c2d-000000000002";
const std::string kUid3 = "0d9a4c5e-3333-4a3b-8c2d-000000000003";

// The kubelet plugin helper's Device as Go marshals it (no JSON tags: field names as keys).
json device(const std::string& uid, const std::string& name, const std::string& request = "gpu") {
  return {{"Requests", {request}},
          {"PoolName", "node-1"},
          {"DeviceName", name},
          {"CDIDeviceIDs", {"k8s.gpu.nvidia.com/claim=" + uid + "-" + name}}};
}
json gpu(const std::string& uid, const std::string& name, const std::string& uuid) {
  return {{"gpu", {{"info", {{"uuid", uuid}}}, {"device", device(uid, name)}}}, {"mig", nullptr}};
}
json status(const std::vector<std::string>& devices, bool admin = false) {
  json results = json::array();
  for (const auto& d : devices) {
    json r = {{"request", "gpu"}, {"driver", kDriver}, {"pool", "node-1"}, {"device", d}};
    if (admin) r["adminAccess"] = true;
    results.push_back(r);
  }
  results.push_back({{"request", "nic"}, {"driver", "nic.example.com"}, {"pool", "node-1"}, {"device", "eth-0"}});
  return {{"allocation", {{"devices", {{"results", results}}}}},
          {"reservedFor", {{{"resource", "pods"}, {"name", "trainer-0"}, {"uid", "pod-uid"}}}}};
}
json group(json devices, const std::string& mps = "") {
  return {{"devices", std::move(devices)}, {"configState", {{"mpsControlDaemonID", mps}}}};
}

NvidiaCheckpoint parse(const json& j) {
  auto parsed = parse_nvidia_checkpoint(j.dump(), kDriver);
  EXPECT_TRUE(parsed.ok()) << parsed.error().message;
  return parsed.ok() ? *parsed : NvidiaCheckpoint{};
}

// What a file with one unreadable part says about it (the file itself parses: issue 38).
std::string passed_over(std::string_view text) {
  auto parsed = parse_nvidia_checkpoint(text, kDriver);
  EXPECT_TRUE(parsed.ok()) << parsed.error().message;
  if (!parsed.ok()) return "";
  EXPECT_EQ(parsed->skipped.size(), 1u);
  return parsed->skipped.empty() ? "" : parsed->skipped[0];
}

std::string error_of(std::string_view text) {
  auto parsed = parse_nvidia_checkpoint(text, kDriver);
  EXPECT_FALSE(parsed.ok()) << text.substr(0, 200);
  return parsed.ok() ? "" : parsed.error().message;
}

TEST(NvidiaCheckpoint, V2CompletedAndStartedClaimsWithEveryDeviceKind) {
  json mig = {{"gpu", nullptr},
              {"mig",
               {{"concrete",
                 {{"parentMinor", 1}, {"giId", 7}, {"ciId", 0}, {"migUUID", "MIG-aaaa"}, {"parentUUID", "GPU-1111"}}},
                {"device", device(kUid1, "gpu-1-mig-1g10gb-19-0")}}}};
  json vfio = {{"vfio", {{"info", {{"uuid", "GPU-2222"}}}, {"device", device(kUid1, "gpu-2")}}}};
  json file = {
      {"checksum", 12345},
      {"v2",
       {{"checksum", 678},
        {"preparedClaims",
         {{kUid1,
           {{"checkpointState", "PrepareCompleted"},
            {"status", status({"gpu-0", "gpu-1-mig-1g10gb-19-0", "gpu-2"})},
            {"preparedDevices", {group({gpu(kUid1, "gpu-0", "GPU-0000"), mig}, "mps-abc"), group({vfio})}}}},
          {kUid2,
           {{"checkpointState", "PrepareStarted"},
            {"status", status({"gpu-3"})},
            {"name", "train"},
            {"namespace", "team-a"}}}}}}}};
  const auto cp = parse(file);
  ASSERT_EQ(cp.claims.size(), 2u);
  EXPECT_TRUE(cp.skipped.empty());

  const NvidiaClaim& done = cp.claims[0];
  EXPECT_EQ(done.uid, kUid1);
  EXPECT_TRUE(done.completed);
  EXPECT_EQ(done.section, "v2");
  EXPECT_EQ(done.ns, "");  // NVIDIA's driver drops them when it records completion
  EXPECT_EQ(done.mps_control_daemon, "mps-abc");
  EXPECT_EQ(done.pods, std::vector<std::string>{"trainer-0"});
  EXPECT_EQ(done.allocated, (std::vector<std::string>{"gpu-0", "gpu-1-mig-1g10gb-19-0", "gpu-2"}));
  ASSERT_EQ(done.devices.size(), 3u);
  PreparedDevice whole;
  whole.requests = {"gpu"};
  whole.pool = "node-1";
  whole.device = "gpu-0";
  whole.cdi_device_ids = {"k8s.gpu.nvidia.com/claim=" + kUid1 + "-gpu-0"};
  whole.gpu_uuid = "GPU-0000";
  whole.whole_gpu = true;
  EXPECT_EQ(done.devices[0], whole);
  EXPECT_EQ(done.devices[1].device, "gpu-1-mig-1g10gb-19-0");
  EXPECT_EQ(done.devices[1].gpu_uuid, "GPU-1111");  // the MIG device's parent
  EXPECT_FALSE(done.devices[1].whole_gpu);
  EXPECT_EQ(done.devices[2].gpu_uuid, "GPU-2222");  // VFIO passthrough: the whole GPU
  EXPECT_TRUE(done.devices[2].whole_gpu);

  const NvidiaClaim& started = cp.claims[1];
  EXPECT_EQ(started.uid, kUid2);
  EXPECT_FALSE(started.completed);
  EXPECT_EQ(started.ns, "team-a");
  EXPECT_EQ(started.name, "train");
  EXPECT_TRUE(started.devices.empty());
  EXPECT_EQ(started.allocated, std::vector<std::string>{"gpu-3"});
}

TEST(NvidiaCheckpoint, V1OnlyFileOfAnOlderReleaseNamesMigDevicesByTheirOwnUuid) {
  json mig = {{"gpu", nullptr},
              {"mig", {{"info", {{"uuid", "MIG-bbbb"}}}, {"device", device(kUid1, "gpu-0-mig-9-0-1")}}}};
  json file = {{"checksum", 1},
               {"v1",
                {{"preparedClaims",
                  {{kUid1, {{"status", status({"gpu-0-mig-9-0-1"}, true)}, {"preparedDevices", {group({mig})}}}},
                   {kUid3, {{"preparedDevices", {group({gpu(kUid3, "gpu-5", "GPU-5555")})}}}}}}}}};
  const auto cp = parse(file);
  ASSERT_EQ(cp.claims.size(), 2u);
  EXPECT_TRUE(cp.claims[0].completed);  // v1 holds completed claims only
  EXPECT_EQ(cp.claims[0].section, "v1");
  ASSERT_EQ(cp.claims[0].devices.size(), 1u);
  EXPECT_EQ(cp.claims[0].devices[0].gpu_uuid, "MIG-bbbb");
  EXPECT_FALSE(cp.claims[0].devices[0].whole_gpu);
  EXPECT_TRUE(cp.claims[0].devices[0].admin_access);  // from the allocation result
  EXPECT_EQ(cp.claims[1].uid, kUid3);
  EXPECT_EQ(cp.claims[1].devices.at(0).gpu_uuid, "GPU-5555");
  EXPECT_FALSE(cp.claims[1].devices.at(0).admin_access);
}

TEST(NvidiaCheckpoint, BothSectionsV2WinsAndAClaimOnlyInV1IsKept) {
  json file = {
      {"checksum", 1},
      {"v1",
       {{"preparedClaims",
         {{kUid1, {{"preparedDevices", {group({gpu(kUid1, "gpu-9", "GPU-9999")})}}}},
          {kUid3, {{"preparedDevices", {group({gpu(kUid3, "gpu-3", "GPU-3333")})}}}}}}}},
      {"v2",
       {{"checksum", 2},
        {"preparedClaims",
         {{kUid1,
           {{"checkpointState", "PrepareCompleted"}, {"preparedDevices", {group({gpu(kUid1, "gpu-0", "GPU-0000")})}}}},
          {kUid2, {{"checkpointState", "PrepareStarted"}}}}}}}};
  const auto cp = parse(file);
  ASSERT_EQ(cp.claims.size(), 3u);
  EXPECT_EQ(cp.claims[0].uid, kUid1);
  EXPECT_EQ(cp.claims[0].section, "v2");
  EXPECT_EQ(cp.claims[0].devices.at(0).device, "gpu-0");
  EXPECT_EQ(cp.claims[1].uid, kUid2);
  EXPECT_FALSE(cp.claims[1].completed);
  EXPECT_EQ(cp.claims[2].uid, kUid3);
  EXPECT_EQ(cp.claims[2].section, "v1");
  EXPECT_TRUE(cp.claims[2].completed);
}

TEST(NvidiaCheckpoint, KeysMatchAsGoMatchesThemAndNullIsAbsent) {
  const json file = json::parse(R"({
    "V2": {"PreparedClaims": {")" + kUid1 + R"(": {
      "CheckpointState": "PrepareCompleted", "status": null,
      "preparedDevices": [null, {"devices": [null, {"GPU": {"Info": {"UUID": "GPU-4444"},
        "Device": {"requests": ["gpu"], "poolname": "node-1", "deviceName": "gpu-4", "cdiDeviceIDs": ["a/b=c"]}}}]}]}}},
    "v1": null})");
  const auto cp = parse(file);
  ASSERT_EQ(cp.claims.size(), 1u);
  ASSERT_EQ(cp.claims[0].devices.size(), 1u);
  EXPECT_EQ(cp.claims[0].devices[0].device, "gpu-4");
  EXPECT_EQ(cp.claims[0].devices[0].pool, "node-1");
  EXPECT_EQ(cp.claims[0].devices[0].gpu_uuid, "GPU-4444");
  EXPECT_EQ(cp.claims[0].devices[0].cdi_device_ids, std::vector<std::string>{"a/b=c"});
  EXPECT_TRUE(cp.claims[0].completed);
  // Empty files NVIDIA's driver writes at its first start.
  EXPECT_TRUE(parse(json{{"checksum", 0}, {"v2", {{"checksum", 0}}}}).claims.empty());
  EXPECT_TRUE(parse(json::object()).claims.empty());
}

TEST(NvidiaCheckpoint, AnUnsafeUidIsPassedOverWithTheReason) {
  json file = {{"v2",
                {{"preparedClaims",
                  {{"../../etc", {{"checkpointState", "PrepareCompleted"}}},
                   {kUid1, {{"checkpointState", "PrepareCompleted"}}}}}}}};
  const auto cp = parse(file);
  ASSERT_EQ(cp.claims.size(), 1u);
  EXPECT_EQ(cp.claims[0].uid, kUid1);
  ASSERT_EQ(cp.skipped.size(), 1u);
  EXPECT_NE(cp.skipped[0].find("not a Kubernetes UID"), std::string::npos) << cp.skipped[0];
}

TEST(NvidiaCheckpoint, ErrorsNameThePlace) {
  EXPECT_EQ(error_of("{\"v2\": "), "not JSON");
  EXPECT_EQ(error_of(""), "not JSON");
  EXPECT_EQ(error_of("[]"), "the file: expected a JSON object");
  // Below the root, what is wrong is passed over, with where and why, and the rest is read.
  EXPECT_EQ(passed_over(R"({"v2": []})"), "v2: expected an object; passed over");
  EXPECT_EQ(passed_over(R"({"v2": {"preparedClaims": [1]}})"), "v2.preparedClaims: expected an object; passed over");
  EXPECT_EQ(passed_over(R"({"v1": {"preparedClaims": {")" + kUid1 + R"(": 7}}})"),
            "v1.preparedClaims[\"" + kUid1 + "\"]: expected an object; passed over");
  json bad_ids = {{"v2", {{"preparedClaims", {{kUid1, {{"checkpointState", "PrepareCompleted"}}}}}}}};
  json dev = device(kUid1, "gpu-0");
  dev["CDIDeviceIDs"] = {"ok", 5};
  bad_ids["v2"]["preparedClaims"][kUid1]["preparedDevices"] = {group({{{"gpu", {{"device", dev}}}}})};
  EXPECT_EQ(passed_over(bad_ids.dump()), "v2.preparedClaims[\"" + kUid1 +
                                             "\"].preparedDevices[0].devices[0].gpu.device.CDIDeviceIDs[1]: expected "
                                             "a string; passed over");
  json no_name = bad_ids;
  dev = device(kUid1, "");
  no_name["v2"]["preparedClaims"][kUid1]["preparedDevices"] = {group({{{"gpu", {{"device", dev}}}}})};
  EXPECT_NE(passed_over(no_name.dump()).find("DeviceName: expected a device name"), std::string::npos);
  json no_device = bad_ids;
  no_device["v2"]["preparedClaims"][kUid1]["preparedDevices"] = {group({{{"gpu", {{"info", {{"uuid", "GPU-1"}}}}}}})};
  EXPECT_NE(passed_over(no_device.dump()).find("gpu.device: expected the device the kubelet was answered"),
            std::string::npos);
  json no_kind = bad_ids;
  no_kind["v2"]["preparedClaims"][kUid1]["preparedDevices"] = {group({{{"gpu", nullptr}, {"mig", nullptr}}})};
  EXPECT_NE(passed_over(no_kind.dump()).find("expected a \"gpu\", \"mig\" or \"vfio\" device"), std::string::npos);
  json bad_admin = bad_ids;
  bad_admin["v2"]["preparedClaims"][kUid1]["preparedDevices"] = nullptr;
  bad_admin["v2"]["preparedClaims"][kUid1]["status"] = status({"gpu-0"});
  bad_admin["v2"]["preparedClaims"][kUid1]["status"]["allocation"]["devices"]["results"][0]["adminAccess"] = "yes";
  EXPECT_NE(passed_over(bad_admin.dump()).find("results[0].adminAccess: expected true or false"), std::string::npos);

  // Deeper than the nesting limit, and larger than the size limit: refused before parsing.
  std::string deep = "{\"v2\": " + std::string(100, '[') + std::string(100, ']') + "}";
  EXPECT_NE(error_of(deep).find("deeper than"), std::string::npos);
  std::string huge(kMaxNvidiaCheckpointBytes + 1, ' ');
  EXPECT_NE(error_of(huge).find("larger than 64 MiB"), std::string::npos);
}

// Issue 38: one bad claim entry (here a reservedFor of strings) drops that entry only; a bad "v2"
// entry of a claim "v1" also holds is taken from "v1"; the good entries are all read.
TEST(NvidiaCheckpoint, OneBadEntryIsPassedOverAndEveryOtherClaimRead) {
  json good = {{"checkpointState", "PrepareCompleted"}, {"status", status({"gpu-0"})},
               {"preparedDevices", {group({gpu(kUid1, "gpu-0", "GPU-0")})}}};
  json bad = good;
  bad["status"]["reservedFor"] = {"pod"};
  json v1_copy = {{"status", status({"gpu-2"})}, {"preparedDevices", {group({gpu(kUid3, "gpu-2", "GPU-2")})}}};
  json file = {{"v2", {{"preparedClaims", {{kUid1, good}, {kUid2, bad}, {kUid3, bad}}}}},
               {"v1", {{"preparedClaims", {{kUid1, good}, {kUid3, v1_copy}}}}}};
  const auto cp = parse(file);
  ASSERT_EQ(cp.claims.size(), 2u);
  EXPECT_EQ(cp.claims[0].uid, kUid1);
  EXPECT_EQ(cp.claims[0].devices.at(0).device, "gpu-0");
  EXPECT_EQ(cp.claims[1].uid, kUid3);
  EXPECT_EQ(cp.claims[1].section, "v1");
  EXPECT_EQ(cp.claims[1].devices.at(0).device, "gpu-2");
  ASSERT_EQ(cp.skipped.size(), 2u);
  EXPECT_EQ(cp.skipped[0], "v2.preparedClaims[\"" + kUid2 + "\"].status.reservedFor[0]: expected an object; passed over");
  EXPECT_TRUE(cp.unknown_sections.empty());
}

// Issue 38: a section of a newer format is named, so that the file is kept for the kgpu that knows it.
TEST(NvidiaCheckpoint, SectionsOfAnUnknownVersionAreNamed) {
  json file = {{"checksum", 1}, {"v3", {{"preparedClaims", {{kUid1, {{"anything", 1}}}}}}}};
  const auto cp = parse(file);
  EXPECT_TRUE(cp.claims.empty());
  EXPECT_EQ(cp.unknown_sections, std::vector<std::string>{"v3"});
  EXPECT_TRUE(parse(json{{"V1", json::object()}, {"v2", nullptr}, {"vx", 1}}).unknown_sections.empty());
}

TEST(NvidiaCheckpoint, AnotherDriversAllocationResultsAreNotItsDevices) {
  json file = {{"v2",
                {{"preparedClaims",
                  {{kUid1, {{"checkpointState", "PrepareStarted"}, {"status", status({})}}}}}}}};
  const auto cp = parse(file);
  ASSERT_EQ(cp.claims.size(), 1u);
  EXPECT_TRUE(cp.claims[0].allocated.empty());  // the NIC result belongs to nic.example.com
}

TEST(NvidiaCheckpoint, SpecFileIsCdisTransientName) {
  EXPECT_EQ(nvidia_claim_spec_file(kDriver, kUid1), "k8s.gpu.nvidia.com-claim_" + kUid1 + ".yaml");
}

}  // namespace
}  // namespace kgpu::dra
