// prepare_claim() on synthetic A100 nodes: the per-claim CDI spec (devices, nodes, env, driver
// files), the kubelet's answer, and the sharing configs. Expectations come from the same inventory
// through the device-plugin path's helpers, so both APIs provably hand out the same nodes.
#include <gtest/gtest.h>

#include <algorithm>

#include "cdi/spec_builder.h"
#include "core/resource_plan.h"
#include "dra/model/device_names.h"
#include "dra/model/publication.h"
#include "dra/publish/slice_objects.h"
#include "dra/sharing/prepare.h"
#include "plan/device_edits.h"
#include "plan/device_ids.h"
#include "plan/mps_paths.h"
#include "plan/nvidia_edits_nodes.h"
#include "unit/dra/claim_test_support.h"
#include "unit/dra/synthetic_node.h"

namespace kgpu::dra {
namespace {

using nlohmann::json;
using testing::claim_json;
using testing::gpu_name;
using testing::gpu_sharing;
using testing::mig_name;
using testing::opaque_config;

constexpr const char* kUid = "0b6f2c4e-1111-4000-8000-00000000c1a1";

struct Node {
  Inventory inventory = testing::a100_node(4, 1);  // GPU 0 in MIG mode (seven 1g.5gb), GPUs 1-3 full
  Config config;
  DriverPool pool;
  Node() {
    config.mps_root = "/run/kgpu/mps";
    republish();
  }
  void republish() {
    SliceOptions o;
    o.node_name = "node-1";
    auto p = build_publication(inventory, o);
    EXPECT_TRUE(p.ok());
    // As the daemon hands devices to the claim store: none tainted unhealthy (dra_wiring.cpp).
    pool = with_taint_support(p->pools.at(0), TaintSupport::Off);
  }
  Result<Preparation> prepare(const json& claim, const DriverFiles* files = nullptr) const {
    auto parsed = parse_resource_claim(claim.dump());
    EXPECT_TRUE(parsed.ok()) << parsed.error().message;
    if (!parsed) return parsed.error();
    return prepare_claim(*parsed, PrepareInputs{config, inventory, pool, files});
  }
  Preparation ok(const json& claim, const DriverFiles* files = nullptr) const {
    auto p = prepare(claim, files);
    EXPECT_TRUE(p.ok()) << p.error().message;
    return p.ok() ? *p : Preparation{};
  }
  std::string error(const json& claim) const {
    auto p = prepare(claim);
    EXPECT_FALSE(p.ok());
    return p.ok() ? "" : p.error().message;
  }
};

json node_list(const Config& config, const std::vector<std::string>& paths) {
  json out = json::array();
  for (const auto& p : paths) out.push_back({{"path", p}, {"hostPath", host_path_under(config.dev_root(), p)}, {"permissions", "rw"}});
  return out;
}

std::vector<std::string> env_of(const json& edits) {
  return edits.contains("env") ? edits["env"].get<std::vector<std::string>>() : std::vector<std::string>{};
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

TEST(DraPrepare, FullGpusGetTheirNodesAndOneCdiIdEach) {
  Node n;
  n.config.nvidia_dev_root = "/host-dev-root";
  const Preparation p = n.ok(claim_json(kUid, {{"gpus", gpu_name(n.inventory, 1)}, {"gpus", gpu_name(n.inventory, 3)}}));
  const std::string kind = "k8s.gpu.nvidia.com/claim";

  ASSERT_EQ(p.claim.devices.size(), 2u);
  for (size_t k = 0; k < 2; ++k) {
    const size_t g = k == 0 ? 1 : 3;
    const PreparedDevice& d = p.claim.devices[k];
    EXPECT_EQ(d.requests, std::vector<std::string>{"gpus"});
    EXPECT_EQ(d.pool, "node-1");
    EXPECT_EQ(d.device, gpu_name(n.inventory, g));
    EXPECT_EQ(d.cdi_device_ids, std::vector<std::string>{kind + "=" + kUid + "-" + gpu_name(n.inventory, g)});
    const json& spec_device = p.cdi_spec["devices"][k];
    EXPECT_EQ(spec_device["name"], std::string(kUid) + "-" + gpu_name(n.inventory, g));
    EXPECT_EQ(spec_device["containerEdits"]["deviceNodes"], node_list(n.config, nvidia_gpu_node_paths(n.inventory.gpus[g])));
  }
  EXPECT_EQ(p.cdi_spec["kind"], kind);
  EXPECT_EQ(p.cdi_spec["cdiVersion"], kCdiSpecVersion);
  EXPECT_EQ(p.claim.cdi_spec_file, std::string("kgpu-k8s.gpu.nvidia.com-claim_") + kUid + ".json");
  const json& common = p.cdi_spec["containerEdits"];
  EXPECT_EQ(common["deviceNodes"], node_list(n.config, nvidia_control_node_paths(n.inventory)));
  EXPECT_EQ(env_of(common), std::vector<std::string>{}) << "scoped per device: a container sees its request's GPUs";
  // Both devices serve request "gpus": each names both, so a container using both sees both.
  for (size_t k = 0; k < 2; ++k)
    EXPECT_EQ(env_of(p.cdi_spec["devices"][k]["containerEdits"]),
              std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=" + n.inventory.gpus[1].uuid + "," +
                                       n.inventory.gpus[3].uuid});
  EXPECT_TRUE(p.claim.time_slicing.empty());
  EXPECT_FALSE(p.claim.mps);
}

TEST(DraPrepare, MigDevicesGetParentAndCapabilityNodes) {
  Node n;
  n.inventory.gpus[0].mig_devices[2].capability_nodes = {{"/dev/nvidia-caps/nvidia-cap21"}, {"/dev/nvidia-caps/nvidia-cap22"}};
  n.republish();
  const Preparation p = n.ok(claim_json(kUid, {{"mig", mig_name(n.inventory, 0, 2)}}));
  ASSERT_EQ(p.claim.devices.size(), 1u);
  EXPECT_EQ(p.cdi_spec["devices"][0]["containerEdits"]["deviceNodes"],
            node_list(n.config, nvidia_mig_node_paths(n.inventory.gpus[0], n.inventory.gpus[0].mig_devices[2])));
  EXPECT_EQ(env_of(p.cdi_spec["devices"][0]["containerEdits"]),
            std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=" + n.inventory.gpus[0].mig_devices[2].uuid});
}

TEST(DraPrepare, IndexStrategyNamesDevicesByIndexForTheRuntime) {
  Node n;
  n.config.device_id_strategy = DeviceIdStrategy::Index;
  const Preparation p = n.ok(claim_json(kUid, {{"a", gpu_name(n.inventory, 2)}, {"b", mig_name(n.inventory, 0, 4)}}));
  // Requests "a" and "b" are scoped apart: each device names its own request's devices only.
  EXPECT_EQ(env_of(p.cdi_spec["devices"][0]["containerEdits"]),
            std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=" + gpu_device_id(n.config, n.inventory.gpus[2])});
  EXPECT_EQ(env_of(p.cdi_spec["devices"][1]["containerEdits"]),
            std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=" +
                                     mig_device_id(n.config, n.inventory.gpus[0], n.inventory.gpus[0].mig_devices[4])});
}

// `gpu` published for memory shares of 1 GiB steps (kgpu.dra.sharing.memory), as the builder does.
void share_gpu(DriverPool& pool, const std::string& gpu) {
  for (auto& d : pool.devices) {
    d.allow_multiple_allocations = d.name == gpu;
    for (auto& c : d.capacity)
      if (d.name == gpu && c.name == "memory") c.request_policy = CapacityRequestPolicy{1u << 30, 1u << 30, 1u << 30};
  }
}

TEST(DraPrepare, RequestsSharingADeviceAreMergedAndSubrequestsStripped) {
  Node n;
  const std::string gpu = gpu_name(n.inventory, 1);
  json claim = claim_json(kUid, {{"a/fast", gpu}, {"b", gpu}, {"a/fast", gpu}});
  const Preparation p = n.ok(claim);
  ASSERT_EQ(p.claim.devices.size(), 1u);
  EXPECT_EQ(p.claim.devices[0].requests, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(p.cdi_spec["devices"].size(), 1u);

  // Consumable-capacity shares of one device (published as shareable) are separate answers backed
  // by one CDI device.
  share_gpu(n.pool, gpu);
  const Preparation shares = n.ok(claim_json(kUid, {{"a", gpu, "gpu.nvidia.com", "node-1", false, "s1"},
                                                    {"b", gpu, "gpu.nvidia.com", "node-1", false, "s2"}}));
  ASSERT_EQ(shares.claim.devices.size(), 2u);
  EXPECT_EQ(shares.claim.devices[0].share_id, "s1");
  EXPECT_EQ(shares.claim.devices[1].share_id, "s2");
  EXPECT_EQ(shares.claim.devices[0].cdi_device_ids, shares.claim.devices[1].cdi_device_ids);
  EXPECT_EQ(shares.cdi_spec["devices"].size(), 1u);
}

// Issue 28, item 4: two claims of different namespaces with share IDs on a device never published
// with allowMultipleAllocations were both prepared (the conflict check lets distinct shares pass).
TEST(DraPrepare, AShareIdOnADeviceNotPublishedAsShareableIsRefused) {
  Node n;
  const std::string gpu = gpu_name(n.inventory, 1);
  auto parsed = parse_resource_claim(claim_json(kUid, {{"a", gpu, "gpu.nvidia.com", "node-1", false, "s1"}}).dump());
  ASSERT_TRUE(parsed.ok()) << parsed.error().message;
  auto refused = prepare_claim(*parsed, PrepareInputs{n.config, n.inventory, n.pool, nullptr});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.error().code, Error::Code::InvalidArgument);
  EXPECT_NE(refused.error().message.find("device " + gpu + " (request \"a\") is allocated as share \"s1\", but this "
                                         "node does not publish it with allowMultipleAllocations"),
            std::string::npos)
      << refused.error().message;
  // Published as shareable: the share is prepared.
  share_gpu(n.pool, gpu);
  EXPECT_TRUE(prepare_claim(*parsed, PrepareInputs{n.config, n.inventory, n.pool, nullptr}).ok());
}

TEST(DraPrepare, OtherDriversAreIgnoredButUnpublishedDevicesAreErrors) {
  Node n;
  const Preparation p = n.ok(claim_json(kUid, {{"nic", "eth-0", "nic.example.com"}, {"gpu", gpu_name(n.inventory, 1)}}));
  EXPECT_EQ(p.claim.devices.size(), 1u);

  EXPECT_NE(n.error(claim_json(kUid, {{"gpu", "gpu-99"}})).find("device \"gpu-99\" (request \"gpu\") is not published"),
            std::string::npos);
  n.inventory.gpus[2].health = {false, "XID 79"};
  n.republish();
  EXPECT_NE(n.error(claim_json(kUid, {{"gpu", gpu_name(n.inventory, 2)}})).find(gpu_name(n.inventory, 2)),
            std::string::npos);
  EXPECT_NE(n.error(claim_json("../etc", {{"gpu", gpu_name(n.inventory, 1)}})).find("claim UID \"../etc\""),
            std::string::npos);
}

TEST(DraPrepare, DriverFilesGiveTheSameCommonEditsAsTheDevicePluginSpec) {
  Node n;
  DriverFiles files;
  files.library_dir = "/usr/lib/x86_64-linux-gnu";
  files.libraries = {"/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"};
  files.binaries = {"/usr/bin/nvidia-smi"};
  files.control_nodes = {"/dev/nvidiactl", "/dev/nvidia-uvm"};
  const Preparation p = n.ok(claim_json(kUid, {{"gpu", gpu_name(n.inventory, 1)}}), &files);
  const json expected = nvidia_common_cdi_edits(n.config, n.inventory, files);
  const json& common = p.cdi_spec["containerEdits"];
  EXPECT_EQ(common["mounts"], expected["mounts"]);
  EXPECT_EQ(common["hooks"], expected["hooks"]);
  EXPECT_EQ(common["deviceNodes"], expected["deviceNodes"]);
  // Not the device-plugin spec's "void": this spec names the claim's devices (on the device).
  EXPECT_EQ(env_of(common), std::vector<std::string>{});
  EXPECT_EQ(env_of(p.cdi_spec["devices"][0]["containerEdits"]),
            std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=" + n.inventory.gpus[1].uuid});
}

TEST(DraPrepare, TimeSlicingIsRecordedPerGpuForTheCaller) {
  Node n;
  const json configs = json::array({
      opaque_config(gpu_sharing({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Long"}}}}), {"a"}),
      opaque_config(gpu_sharing({{"strategy", "TimeSlicing"}}, "MigDeviceConfig"), {"m"}),
  });
  const Preparation p = n.ok(claim_json(
      kUid, {{"a", gpu_name(n.inventory, 1)}, {"b", gpu_name(n.inventory, 2)}, {"m", mig_name(n.inventory, 0, 0)}}, configs));
  EXPECT_EQ(p.claim.time_slicing, (std::vector<TimeSliceSetting>{{n.inventory.gpus[1].uuid, TimeSliceInterval::Long}}));
  EXPECT_FALSE(p.claim.mps);
}

TEST(DraPrepare, ConfigsForEveryRequestPassOverDevicesOfTheOtherType) {
  // A DeviceClass's GpuConfig reaches every request of the claim, its MIG device included; as in
  // NVIDIA's driver the MIG device passes over it (to the claim's MigDeviceConfig), the GPU takes it.
  Node n;
  const json configs = json::array({
      opaque_config(gpu_sharing({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Short"}}}}), {}, "FromClass"),
      opaque_config(gpu_sharing({{"strategy", "TimeSlicing"}}, "MigDeviceConfig")),
  });
  const Preparation p =
      n.ok(claim_json(kUid, {{"g", gpu_name(n.inventory, 2)}, {"m", mig_name(n.inventory, 0, 1)}}, configs));
  EXPECT_EQ(p.claim.time_slicing, (std::vector<TimeSliceSetting>{{n.inventory.gpus[2].uuid, TimeSliceInterval::Short}}));
}

TEST(DraPrepare, MpsGivesADaemonAndClientEditsLikeTheDevicePluginPath) {
  Node n;
  const json mps = gpu_sharing({{"strategy", "MPS"},
                                {"mpsConfig",
                                 {{"defaultActiveThreadPercentage", 25},
                                  {"defaultPinnedDeviceMemoryLimit", "8Gi"},
                                  {"defaultPerDevicePinnedMemoryLimit", {{n.inventory.gpus[3].uuid, "2Gi"}}}}}});
  const Preparation p =
      n.ok(claim_json(kUid, {{"g", gpu_name(n.inventory, 3)}, {"g", gpu_name(n.inventory, 1)}}, json::array({opaque_config(mps)})));
  ASSERT_TRUE(p.claim.mps);
  const std::string resource = mps_claim_resource(kUid);
  // The daemon sees the claim's GPUs only, in PCI order (GPU 1 on bus 02, GPU 3 on bus 04), and its
  // limits use those ordinals: GPU 3's own limit replaces the claim-wide one.
  EXPECT_EQ(p.claim.mps->claim_uid, kUid);
  EXPECT_EQ(p.claim.mps->visible_devices, (std::vector<std::string>{n.inventory.gpus[1].uuid, n.inventory.gpus[3].uuid}));
  EXPECT_EQ(p.claim.mps->active_thread_percentage, 25);
  EXPECT_EQ(p.claim.mps->pinned_mib, (std::map<int, uint64_t>{{0, 8192}, {1, 2048}}));
  // The client edits are on each MPS device (the containers of the MPS request), not claim-wide.
  EXPECT_FALSE(p.cdi_spec["containerEdits"].contains("mounts"));
  const json& common = p.cdi_spec["devices"][0]["containerEdits"];
  EXPECT_EQ(env_of(common), env_of(p.cdi_spec["devices"][1]["containerEdits"])) << "one request: the same edits";
  EXPECT_TRUE(has(env_of(common), "NVIDIA_VISIBLE_DEVICES=" + n.inventory.gpus[3].uuid + "," + n.inventory.gpus[1].uuid))
      << "the request's devices, in the claim's order";
  EXPECT_EQ(common["mounts"], p.cdi_spec["devices"][1]["containerEdits"]["mounts"]);
  const auto env = env_of(common);
  EXPECT_TRUE(has(env, "CUDA_MPS_PIPE_DIRECTORY=" + mps_container_pipe_dir(resource)));
  EXPECT_TRUE(has(env, "CUDA_MPS_ACTIVE_THREAD_PERCENTAGE=25"));
  // Ordinals in PCI order of the claim's GPUs: GPU 1 (bus 02) is 0, GPU 3 (bus 04) is 1.
  EXPECT_TRUE(has(env, "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=8192M,1=2048M"));
  std::vector<std::string> mount_targets;
  for (const auto& m : common["mounts"]) mount_targets.push_back(m["containerPath"]);
  EXPECT_TRUE(has(mount_targets, mps_container_pipe_dir(resource)));
  std::vector<std::string> mount_sources;
  for (const auto& m : common["mounts"]) mount_sources.push_back(m["hostPath"]);
  EXPECT_TRUE(has(mount_sources, mps_claim_daemon_spec(n.config.mps_root, *p.claim.mps).pipe_dir));
  // The claim's own shared memory, the folder its daemon sees at /dev/shm (issue 28, item 5).
  EXPECT_EQ(common["mounts"].back(), (nlohmann::json{{"containerPath", "/dev/shm"},
                                                      {"hostPath", mps_claim_daemon_spec(n.config.mps_root, *p.claim.mps).shm_dir},
                                                      {"options", {"rw", "nosuid", "nodev", "bind"}}}))
      << common["mounts"].dump();
}

// Issue 29, item 4 (NVIDIA's quickstart gpu-test5): one claim, a time-sliced request and an MPS
// request. Only the MPS request's containers become MPS clients, the daemon sees only the MPS
// request's GPU, and each container sees only its own request's GPU.
TEST(DraPrepare, SharingAndVisibilityAreScopedPerRequest) {
  Node n;
  const json configs = json::array({
      opaque_config(gpu_sharing({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Long"}}}}), {"ts"}),
      opaque_config(gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultActiveThreadPercentage", 50}}}}), {"mps"}),
  });
  const Preparation p =
      n.ok(claim_json(kUid, {{"ts", gpu_name(n.inventory, 1)}, {"mps", gpu_name(n.inventory, 2)}}, configs));
  ASSERT_TRUE(p.claim.mps);
  EXPECT_EQ(p.claim.mps->visible_devices, std::vector<std::string>{n.inventory.gpus[2].uuid});
  EXPECT_EQ(p.claim.time_slicing, (std::vector<TimeSliceSetting>{{n.inventory.gpus[1].uuid, TimeSliceInterval::Long}}));
  const auto sliced = env_of(p.cdi_spec["devices"][0]["containerEdits"]);
  const auto mps = env_of(p.cdi_spec["devices"][1]["containerEdits"]);
  EXPECT_EQ(sliced, std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=" + n.inventory.gpus[1].uuid});
  EXPECT_TRUE(has(mps, "NVIDIA_VISIBLE_DEVICES=" + n.inventory.gpus[2].uuid));
  EXPECT_TRUE(has(mps, "CUDA_MPS_PIPE_DIRECTORY=" + mps_container_pipe_dir(mps_claim_resource(kUid))));
  EXPECT_FALSE(p.cdi_spec["devices"][0]["containerEdits"].contains("mounts")) << "no MPS pipe for the time-sliced one";
  EXPECT_TRUE(env_of(p.cdi_spec["containerEdits"]).empty());
  EXPECT_FALSE(p.cdi_spec["containerEdits"].contains("mounts"));
}

// Issue 29, item 5: MPS on MIG devices, as NVIDIA's driver accepts it. The daemon sees the MIG
// devices by their own UUIDs, in their parents' PCI order then their index; limits follow.
TEST(DraPrepare, MpsOnMigDevicesGivesADaemonOverTheMigDevices) {
  Node n;
  const json mps = gpu_sharing({{"strategy", "MPS"},
                                {"mpsConfig",
                                 {{"defaultPinnedDeviceMemoryLimit", "2Gi"},
                                  {"defaultPerDevicePinnedMemoryLimit", {{n.inventory.gpus[0].mig_devices[1].uuid, "1Gi"}}}}}},
                               "MigDeviceConfig");
  const Preparation p = n.ok(claim_json(kUid, {{"m", mig_name(n.inventory, 0, 3)}, {"m", mig_name(n.inventory, 0, 1)}},
                                        json::array({opaque_config(mps)})));
  ASSERT_TRUE(p.claim.mps);
  EXPECT_EQ(p.claim.mps->visible_devices, (std::vector<std::string>{n.inventory.gpus[0].mig_devices[1].uuid,
                                                                     n.inventory.gpus[0].mig_devices[3].uuid}));
  EXPECT_EQ(p.claim.mps->pinned_mib, (std::map<int, uint64_t>{{0, 1024}, {1, 2048}}));
  for (size_t k = 0; k < 2; ++k)
    EXPECT_TRUE(has(env_of(p.cdi_spec["devices"][k]["containerEdits"]),
                    "CUDA_MPS_PIPE_DIRECTORY=" + mps_container_pipe_dir(mps_claim_resource(kUid))));
  // A limit above the MIG device's own memory (not its parent's) is refused.
  const json too_big = gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultPinnedDeviceMemoryLimit", "8Gi"}}}},
                                   "MigDeviceConfig");
  EXPECT_NE(n.error(claim_json(kUid, {{"m", mig_name(n.inventory, 0, 3)}}, json::array({opaque_config(too_big)})))
                .find("exceeds its"),
            std::string::npos);
}

TEST(DraPrepare, ConfigsKgpuCannotHonourAreErrors) {
  Node n;
  const std::string gpu = gpu_name(n.inventory, 1), mig = mig_name(n.inventory, 0, 0);
  auto with = [&](const std::string& device, const json& parameters) {
    return claim_json(kUid, {{"r", device}}, json::array({opaque_config(parameters, {"r"})}));
  };
  const json mps = gpu_sharing({{"strategy", "MPS"}});
  EXPECT_NE(n.error(with(mig, mps)).find("GpuConfig cannot configure MIG device"), std::string::npos);
  EXPECT_NE(n.error(with(gpu, gpu_sharing({{"strategy", "MPS"}}, "MigDeviceConfig"))).find("MigDeviceConfig cannot configure full GPU"),
            std::string::npos);
  EXPECT_NE(n.error(with(gpu, gpu_sharing({{"strategy", "MPS"},
                                          {"mpsConfig", {{"defaultPerDevicePinnedMemoryLimit", {{"7", "1Gi"}}}}}})))
                .find("key \"7\" is not an index into the 1 device(s) this config applies to"),
            std::string::npos);
  EXPECT_NE(n.error(with(gpu, gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultPinnedDeviceMemoryLimit", "41Gi"}}}})))
                .find("exceeds"),
            std::string::npos);
  EXPECT_NE(n.error(with(gpu, gpu_sharing({{"strategy", "Nope"}}))).find("config for request \"r\""), std::string::npos);
  n.config.mps_root.clear();
  EXPECT_NE(n.error(with(gpu, mps)).find("without --mps-root"), std::string::npos);

  const json two = claim_json(kUid, {{"a", gpu}, {"b", gpu_name(n.inventory, 2)}},
                              json::array({opaque_config(gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultActiveThreadPercentage", 10}}}}), {"a"}),
                                           opaque_config(gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", {{"defaultActiveThreadPercentage", 20}}}}), {"b"})}));
  n.config.mps_root = "/run/kgpu/mps";
  EXPECT_NE(n.error(two).find("two MPS active thread percentages"), std::string::npos);

  // A driver that reports a UUID CUDA_VISIBLE_DEVICES cannot carry (a comma would name two GPUs):
  // the MPS claim is refused by name, instead of a daemon that sees the wrong GPUs.
  n.inventory.gpus[1].uuid = "GPU-1,GPU-2";
  n.republish();
  EXPECT_NE(n.error(with(gpu_name(n.inventory, 1), mps)).find("GPU UUID \"GPU-1,GPU-2\" cannot name the GPU"),
            std::string::npos);
}

}  // namespace
}  // namespace kgpu::dra

namespace kgpu::dra {
namespace {

TEST(DraPrepare, AmdGpusGetTheVendorEditsOfTheDevicePluginPath) {
  Inventory inv;
  Gpu g;
  g.vendor = Vendor::Amd;
  g.index = 0;
  g.uuid = "amd-0";
  g.device_nodes = {{"/dev/dri/card1"}, {"/dev/dri/renderD128"}};
  g.attributes["kfd-unique-id"] = "1234";
  inv.gpus.push_back(g);
  Config config;
  SliceOptions o;
  o.node_name = "node-1";
  const DriverPool pool = build_publication(inv, o)->pools.at(0);
  ASSERT_EQ(pool.driver, "gpu.amd.com");
  const std::string name = gpu_device_name(inv.gpus[0]);

  auto claim = parse_resource_claim(claim_json(kUid, {{"gpu", name, "gpu.amd.com"}}).dump());
  ASSERT_TRUE(claim.ok());
  auto p = prepare_claim(*claim, PrepareInputs{config, inv, pool, nullptr});
  ASSERT_TRUE(p.ok()) << p.error().message;
  const ContainerEdits expected = vendor_device_edits(config, inv, Resource{}, {BackingDevice{0, std::nullopt}});
  std::vector<std::string> expected_nodes, nodes;
  for (const auto& d : expected.devices) expected_nodes.push_back(d.container_path);
  for (const auto& d : p->cdi_spec["devices"][0]["containerEdits"]["deviceNodes"]) nodes.push_back(d["path"]);
  EXPECT_EQ(nodes, expected_nodes);
  EXPECT_EQ(p->cdi_spec["kind"], "k8s.gpu.amd.com/claim");
  EXPECT_EQ(env_of(p->cdi_spec["containerEdits"]), std::vector<std::string>{"ROCR_VISIBLE_DEVICES=GPU-1234"});
  EXPECT_EQ(p->claim.devices.at(0).cdi_device_ids, std::vector<std::string>{"k8s.gpu.amd.com/claim=" + std::string(kUid) + "-" + name});

  auto configured = parse_resource_claim(
      claim_json(kUid, {{"gpu", name, "gpu.amd.com"}},
                 json::array({opaque_config(gpu_sharing({{"strategy", "MPS"}}), {}, "FromClaim", "gpu.amd.com")}))
          .dump());
  ASSERT_TRUE(configured.ok());
  auto refused = prepare_claim(*configured, PrepareInputs{config, inv, pool, nullptr});
  ASSERT_FALSE(refused.ok());
  EXPECT_NE(refused.error().message.find("driver gpu.amd.com takes no opaque configuration"), std::string::npos);
}

}  // namespace
}  // namespace kgpu::dra

// Issue 29, item 6: NVIDIA's resource.nvidia.com/v1beta1 semantics of MPS and time-slicing configs.
namespace kgpu::dra {
namespace {

// GPUs 1, 2, 3 with UUIDs in another order than their NVML indexes (and PCI buses): sorted by UUID
// they are GPU 2 ("GPU-aa..."), GPU 3 ("GPU-bb..."), GPU 1 ("GPU-cc...").
Node shuffled_uuids() {
  Node n;
  n.inventory.gpus[1].uuid = "GPU-cc000000-0000-4000-8000-000000000001";
  n.inventory.gpus[2].uuid = "GPU-aa000000-0000-4000-8000-000000000002";
  n.inventory.gpus[3].uuid = "GPU-bb000000-0000-4000-8000-000000000003";
  n.republish();
  return n;
}

json mps_config(const json& settings) { return gpu_sharing({{"strategy", "MPS"}, {"mpsConfig", settings}}); }

TEST(DraPrepareNvidiaSemantics, PerDeviceIndexesCountTheConfigsDevicesInUuidOrder) {
  const Node n = shuffled_uuids();
  const json mps = mps_config({{"defaultPinnedDeviceMemoryLimit", "4Gi"},
                               {"defaultPerDevicePinnedMemoryLimit", {{"1", "1Gi"}, {"2", "2Gi"}}}});
  const Preparation p = n.ok(claim_json(
      kUid, {{"g", gpu_name(n.inventory, 1)}, {"g", gpu_name(n.inventory, 2)}, {"g", gpu_name(n.inventory, 3)}},
      json::array({opaque_config(mps)})));
  ASSERT_TRUE(p.claim.mps);
  // Daemon ordinals are PCI order: GPU 1, 2, 3. Index "1" is GPU 3 (second by UUID), "2" is GPU 1;
  // GPU 2 keeps the default. (By NVML index, "1" and "2" would have been GPUs 1 and 2.)
  EXPECT_EQ(p.claim.mps->visible_devices, (std::vector<std::string>{n.inventory.gpus[1].uuid, n.inventory.gpus[2].uuid,
                                                                     n.inventory.gpus[3].uuid}));
  EXPECT_EQ(p.claim.mps->pinned_mib, (std::map<int, uint64_t>{{0, 2048}, {1, 4096}, {2, 1024}}));
  EXPECT_TRUE(has(env_of(p.cdi_spec["devices"][0]["containerEdits"]),
                  "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=2048M,1=4096M,2=1024M"));
}

TEST(DraPrepareNvidiaSemantics, PerDeviceKeysNameDevicesOfTheirOwnConfigOnly) {
  const Node n = shuffled_uuids();
  const std::string g1 = gpu_name(n.inventory, 1), g2 = gpu_name(n.inventory, 2), g3 = gpu_name(n.inventory, 3);
  // Config "a" has GPUs 1 and 3 (by UUID: GPU 3, GPU 1); config "b" has GPU 2 alone.
  auto two_configs = [&](const json& a_limits, const json& b_limits) {
    return claim_json(kUid, {{"a", g1}, {"b", g2}, {"a", g3}},
                      json::array({opaque_config(mps_config({{"defaultPerDevicePinnedMemoryLimit", a_limits}}), {"a"}),
                                   opaque_config(mps_config({{"defaultPerDevicePinnedMemoryLimit", b_limits}}), {"b"})}));
  };
  const Preparation p = n.ok(two_configs({{"1", "1Gi"}, {n.inventory.gpus[3].uuid, "3Gi"}}, {{"0", "2Gi"}}));
  ASSERT_TRUE(p.claim.mps);
  EXPECT_EQ(p.claim.mps->pinned_mib, (std::map<int, uint64_t>{{0, 1024}, {1, 2048}, {2, 3072}}));

  // Index 2 is past config "a"'s two devices (NVML index 2 is a GPU of the claim, in config "b").
  std::string e = n.error(two_configs({{"2", "1Gi"}}, json::object()));
  EXPECT_NE(e.find("MPS config for request(s) \"a\": defaultPerDevicePinnedMemoryLimit key \"2\" is not an index "
                   "into the 2 device(s) this config applies to (0..1, in UUID order)"),
            std::string::npos)
      << e;
  // GPU 2's UUID is the claim's, but not config "a"'s.
  e = n.error(two_configs({{n.inventory.gpus[2].uuid, "1Gi"}}, json::object()));
  EXPECT_NE(e.find("key \"" + n.inventory.gpus[2].uuid + "\" is neither the UUID of a device this config applies to"),
            std::string::npos)
      << e;
  e = n.error(two_configs(json::object(), {{"GPU-unknown", "1Gi"}}));
  EXPECT_NE(e.find("MPS config for request(s) \"b\": defaultPerDevicePinnedMemoryLimit key \"GPU-unknown\" is neither"),
            std::string::npos)
      << e;
}

TEST(DraPrepareNvidiaSemantics, ZeroActiveThreadPercentageReachesTheDaemon) {
  const Node n;
  const Preparation p = n.ok(claim_json(kUid, {{"g", gpu_name(n.inventory, 1)}},
                                        json::array({opaque_config(mps_config({{"defaultActiveThreadPercentage", 0}}))})));
  ASSERT_TRUE(p.claim.mps);
  EXPECT_EQ(p.claim.mps->active_thread_percentage, 0);
  const auto commands = mps_claim_daemon_spec(n.config.mps_root, *p.claim.mps).commands;
  EXPECT_TRUE(has(commands, "set_default_active_thread_percentage 0"));
  // What kgpu mps-daemon reads back is the same request.
  auto back = parse_mps_claim_request(render_mps_claim_request(*p.claim.mps));
  ASSERT_TRUE(back.ok()) << back.error().message;
  EXPECT_EQ(*back, *p.claim.mps);
  for (const auto& env : env_of(p.cdi_spec["devices"][0]["containerEdits"]))
    EXPECT_FALSE(env.starts_with("CUDA_MPS_ACTIVE_THREAD_PERCENTAGE")) << env;
}

TEST(DraPrepareNvidiaSemantics, LimitsInEveryQuantityFormRoundDownToWholeMib) {
  const Node n;
  auto with_limit = [&](const json& limit) {
    return claim_json(kUid, {{"g", gpu_name(n.inventory, 1)}},
                      json::array({opaque_config(mps_config({{"defaultPinnedDeviceMemoryLimit", limit}}))}));
  };
  // NVIDIA's own test cases: 1G -> 953M, 10M -> 9M, 1Gi -> 1024M.
  for (const auto& [limit, mib] : std::vector<std::pair<json, uint64_t>>{
           {"1e9", 953}, {1e9, 953}, {"1G", 953}, {"10M", 9}, {"1Gi", 1024}, {"0.5Gi", 512}, {"1.5Mi", 1}, {"1048576000m", 1}}) {
    const Preparation p = n.ok(with_limit(limit));
    ASSERT_TRUE(p.claim.mps) << limit.dump();
    EXPECT_EQ(p.claim.mps->pinned_mib, (std::map<int, uint64_t>{{0, mib}})) << limit.dump();
  }
  EXPECT_NE(n.error(with_limit("100m")).find("under the 1Mi"), std::string::npos);
  EXPECT_NE(n.error(with_limit("-1Gi")).find("is negative"), std::string::npos);
  EXPECT_NE(n.error(with_limit("1.5.3Gi")).find("left over"), std::string::npos);
  EXPECT_NE(n.error(with_limit("1e30")).find("larger than"), std::string::npos);
}

TEST(DraPrepareNvidiaSemantics, TimeSlicingWithoutItsConfigSetsTheDefaultInterval) {
  const Node n;
  const std::string gpu = gpu_name(n.inventory, 2);
  const Preparation p = n.ok(
      claim_json(kUid, {{"g", gpu}}, json::array({opaque_config(gpu_sharing({{"strategy", "TimeSlicing"}}))})));
  EXPECT_EQ(p.claim.time_slicing, (std::vector<TimeSliceSetting>{{n.inventory.gpus[2].uuid, TimeSliceInterval::Default}}));
  EXPECT_NE(n.error(claim_json(kUid, {{"g", gpu}},
                               json::array({opaque_config(gpu_sharing(
                                   {{"strategy", "TimeSlicing"}, {"timeSlicingConfig", json::object()}}))})))
                .find("timeSlicingConfig.interval is missing"),
            std::string::npos);
}

}  // namespace
}  // namespace kgpu::dra
