// NVIDIA's DRA driver quickstart, as kgpu serves it (issue 29, "done when"): one case per
// quickstart example, written by us from what each example means (not copied): the claim's
// allocation, then what kgpu publishes for the devices it names, the kubelet's answer, the sharing
// it applies and the per-claim CDI spec. Each case asserts the behaviour that makes kgpu a drop-in
// (driver files, per-request scope, MIG names, NVIDIA's values) and the whole result is compared
// with a reviewed golden file.
// To regenerate after an intended change: KGPU_UPDATE_GOLDEN=1 ./test_dra --gtest_filter='DraQuickstart*'
// and review the diff.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "dra/claims/claim_checkpoint.h"
#include "dra/model/device_names.h"
#include "dra/model/publication.h"
#include "dra/sharing/prepare.h"
#include "unit/dra/claim_test_support.h"
#include "unit/dra/synthetic_node.h"

namespace kgpu::dra {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::claim_json;
using testing::gpu_name;
using testing::gpu_sharing;
using testing::mig_name;
using testing::opaque_config;

constexpr const char* kUid = "5e1c0a77-0000-4000-8000-00000000a001";

// A DGX-like node: GPU 0 in MIG mode (seven 1g.5gb instances at placements 0..6, profile id 19, as
// NVML reports them), GPUs 1-3 whole; the driver's files as find_driver_files() would list them.
struct QuickstartNode {
  Inventory inventory = testing::a100_node(4, 1);
  Config config;
  DriverPool pool;
  DriverFiles files;
  QuickstartNode() {
    config.mps_root = "/run/kgpu/mps";
    for (int m = 0; m < 7; ++m) {
      auto& mig = inventory.gpus[0].mig_devices[static_cast<size_t>(m)];
      mig.gi_profile_id = 19;
      mig.placement_start = m;
      mig.placement_size = 1;
    }
    inventory.driver_version = "550.54.15";
    SliceOptions o;
    o.node_name = "node-1";
    pool = build_publication(inventory, o)->pools.at(0);
    files.library_dir = "/usr/lib/x86_64-linux-gnu";
    files.libraries = {"/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"};
    files.binaries = {"/usr/bin/nvidia-smi"};
    files.control_nodes = {"/dev/nvidiactl", "/dev/nvidia-uvm"};
  }
  Preparation prepare(const json& claim) const {
    auto parsed = parse_resource_claim(claim.dump());
    EXPECT_TRUE(parsed.ok()) << parsed.error().message;
    auto p = prepare_claim(*parsed, PrepareInputs{config, inventory, pool, &files});
    EXPECT_TRUE(p.ok()) << (p.ok() ? "" : p.error().message);
    return p.ok() ? *p : Preparation{};
  }
  // What the slice says of a device the claim got (the attributes its selectors match on).
  json published(const std::string& name) const {
    for (const auto& d : pool.devices)
      if (d.name == name) {
        json attributes = json::object();
        for (const Attributes* list : {d.gpu_attributes.get(), &d.attributes})
          if (list)
            for (const auto& a : *list)
              if (const auto* s = std::get_if<std::string>(&a.value)) attributes[std::string(a.name)] = *s;
        json capacity = json::object();
        for (const auto& c : d.capacity) capacity[std::string(c.name)] = c.value;
        return {{"name", d.name}, {"attributes", attributes}, {"capacity", capacity}};
      }
    return nullptr;
  }
};

std::vector<std::string> env_of(const json& spec, size_t device) {
  const json& edits = spec["devices"][device]["containerEdits"];
  return edits.contains("env") ? edits["env"].get<std::vector<std::string>>() : std::vector<std::string>{};
}

bool has(const std::vector<std::string>& v, const std::string& s) { return std::find(v.begin(), v.end(), s) != v.end(); }

// The whole result, compared with tests/fixtures/golden/dra/quickstart/<name>.json.
void expect_golden(const std::string& name, const QuickstartNode& n, const json& claim, const Preparation& p) {
  json devices = json::array();
  for (const auto& r : claim["status"]["allocation"]["devices"]["results"]) devices.push_back(n.published(r["device"]));
  Checkpoint record{"", {p.claim}, {}};  // the claim as the checkpoint keeps it
  const json result = {{"claim", claim},
                       {"publishedDevices", devices},
                       {"prepared", json::parse(checkpoint_text(record))["claims"][0]},
                       {"cdiSpec", p.cdi_spec}};
  const fs::path golden = fs::path(KGPU_FIXTURES_DIR) / "golden" / "dra" / "quickstart" / (name + ".json");
  const std::string text = result.dump(2) + "\n";
  if (std::getenv("KGPU_UPDATE_GOLDEN")) {
    fs::create_directories(golden.parent_path());
    std::ofstream(golden) << text;
  }
  std::ifstream in(golden);
  std::ostringstream want;
  want << in.rdbuf();
  EXPECT_EQ(text, want.str()) << golden << " differs; KGPU_UPDATE_GOLDEN=1 and review the diff";
}

// gpu-test1: a pod, a claim from a template for one GPU. The container sees that GPU, gets the
// driver's files from the spec, and the attributes a selector on NVIDIA's values matches.
TEST(DraQuickstart, OneGpu) {
  const QuickstartNode n;
  const json claim = claim_json(kUid, {{"gpu", gpu_name(n.inventory, 1)}});
  const Preparation p = n.prepare(claim);
  EXPECT_TRUE(has(env_of(p.cdi_spec, 0), "NVIDIA_VISIBLE_DEVICES=" + n.inventory.gpus[1].uuid));
  std::vector<std::string> mounted;
  for (const auto& m : p.cdi_spec["containerEdits"]["mounts"]) mounted.push_back(m["containerPath"]);
  EXPECT_TRUE(has(mounted, "/usr/lib/x86_64-linux-gnu/libcuda.so.550.54.15"));
  EXPECT_TRUE(has(mounted, "/usr/bin/nvidia-smi"));
  const json device = n.published(gpu_name(n.inventory, 1));
  EXPECT_EQ(device["attributes"]["architecture"], "Ampere");
  EXPECT_EQ(device["attributes"]["brand"], "Nvidia");
  expect_golden("gpu-test1", n, claim, p);
}

// gpu-test2 / gpu-test4: one claim shared by several containers (of one pod, or of several pods):
// one preparation, every container of the claim sees the same GPU.
TEST(DraQuickstart, OneGpuSharedByContainers) {
  const QuickstartNode n;
  const json claim = claim_json(kUid, {{"shared-gpu", gpu_name(n.inventory, 2)}});
  const Preparation p = n.prepare(claim);
  ASSERT_EQ(p.claim.devices.size(), 1u);
  EXPECT_EQ(p.claim.devices[0].requests, std::vector<std::string>{"shared-gpu"});
  expect_golden("gpu-test2", n, claim, p);
}

// gpu-test3: a shared GPU with GpuConfig time-slicing, interval Long: DEFAULT compute mode and the
// interval are applied on the node, the containers need nothing more.
TEST(DraQuickstart, TimeSlicedGpu) {
  const QuickstartNode n;
  const json config = opaque_config(
      gpu_sharing({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Long"}}}}));
  const json claim = claim_json(kUid, {{"ts-gpu", gpu_name(n.inventory, 1)}}, json::array({config}));
  const Preparation p = n.prepare(claim);
  EXPECT_EQ(p.claim.time_slicing, (std::vector<TimeSliceSetting>{{n.inventory.gpus[1].uuid, TimeSliceInterval::Long}}));
  EXPECT_FALSE(p.claim.mps);
  expect_golden("gpu-test3", n, claim, p);
}

// gpu-test5: one claim, a time-sliced request and an MPS request. Scoped per request: the
// time-sliced containers are no MPS clients and see only their GPU; the daemon sees the MPS GPU
// only, which runs EXCLUSIVE_PROCESS.
TEST(DraQuickstart, TimeSlicedAndMpsRequestsInOneClaim) {
  const QuickstartNode n;
  const json configs = json::array(
      {opaque_config(gpu_sharing({{"strategy", "TimeSlicing"}, {"timeSlicingConfig", {{"interval", "Long"}}}}), {"ts-gpu"}),
       opaque_config(gpu_sharing({{"strategy", "MPS"},
                                  {"mpsConfig",
                                   {{"defaultActiveThreadPercentage", 50}, {"defaultPinnedDeviceMemoryLimit", "10Gi"}}}}),
                     {"mps-gpu"})});
  const json claim =
      claim_json(kUid, {{"ts-gpu", gpu_name(n.inventory, 1)}, {"mps-gpu", gpu_name(n.inventory, 3)}}, configs);
  const Preparation p = n.prepare(claim);
  ASSERT_TRUE(p.claim.mps);
  EXPECT_EQ(p.claim.mps->visible_devices, std::vector<std::string>{n.inventory.gpus[3].uuid});
  EXPECT_EQ(p.claim.exclusive_gpus, std::vector<std::string>{n.inventory.gpus[3].uuid});
  EXPECT_EQ(env_of(p.cdi_spec, 0), std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=" + n.inventory.gpus[1].uuid});
  EXPECT_TRUE(has(env_of(p.cdi_spec, 1), "CUDA_MPS_PINNED_DEVICE_MEM_LIMIT=0=10240M"));
  expect_golden("gpu-test5", n, claim, p);
}

// gpu-test6: MIG devices selected by profile, each with its own MigDeviceConfig time-slicing
// (which NVIDIA's driver accepts and leaves to the MIG device as it is): NVIDIA's MIG names and
// memorySlice capacities, the parent's node and the capability nodes per device.
TEST(DraQuickstart, MigDevices) {
  const QuickstartNode n;
  const json config = opaque_config(gpu_sharing({{"strategy", "TimeSlicing"}}, "MigDeviceConfig"));
  const json claim = claim_json(kUid, {{"mig-1g-0", mig_name(n.inventory, 0, 0)}, {"mig-1g-1", mig_name(n.inventory, 0, 5)}},
                                json::array({config}));
  const Preparation p = n.prepare(claim);
  EXPECT_EQ(mig_name(n.inventory, 0, 5), "gpu-0-mig-1g5gb-19-5");
  EXPECT_EQ(n.published(mig_name(n.inventory, 0, 5))["capacity"]["memorySlice5"], 1);
  EXPECT_TRUE(p.claim.time_slicing.empty()) << "no interval on a MIG device";
  EXPECT_EQ(env_of(p.cdi_spec, 1),
            std::vector<std::string>{"NVIDIA_VISIBLE_DEVICES=" + n.inventory.gpus[0].mig_devices[5].uuid});
  expect_golden("gpu-test6", n, claim, p);
}

// gpu-test-mps: two GPUs under one MPS daemon with a default and a per-device pinned limit, the
// per-device key an index into the config's devices in UUID order.
TEST(DraQuickstart, MpsWithLimits) {
  const QuickstartNode n;
  const json config = opaque_config(gpu_sharing(
      {{"strategy", "MPS"},
       {"mpsConfig",
        {{"defaultActiveThreadPercentage", 50},
         {"defaultPinnedDeviceMemoryLimit", "10Gi"},
         {"defaultPerDevicePinnedMemoryLimit", {{"0", "5Gi"}}}}}}));
  const json claim =
      claim_json(kUid, {{"mps-gpu", gpu_name(n.inventory, 1)}, {"mps-gpu", gpu_name(n.inventory, 2)}}, json::array({config}));
  const Preparation p = n.prepare(claim);
  ASSERT_TRUE(p.claim.mps);
  // Index 0 is the lower UUID: GPU 1's on this node.
  EXPECT_EQ(p.claim.mps->pinned_mib, (std::map<int, uint64_t>{{0, 5120}, {1, 10240}}));
  EXPECT_EQ(p.claim.exclusive_gpus.size(), 2u);
  expect_golden("gpu-test-mps", n, claim, p);
}

}  // namespace
}  // namespace kgpu::dra
