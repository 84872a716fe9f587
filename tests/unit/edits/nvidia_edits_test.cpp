// nvidia_device_edits: golden files of whole ContainerEdits per strategy combination on two nodes,
// plus focused checks. Regenerate goldens with KGPU_UPDATE_GOLDEN=1 (then review the diff).
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "plan/allocate.h"
#include "plan/device_edits.h"
#include "plan/nvidia_edits_cdi.h"
#include "plan/plan.h"
#include "unit/edits/inventories.h"

namespace kgpu {
namespace {

using nlohmann::json;
using testing::mig_node;
using testing::two_gpu_node;

json to_json(const ContainerEdits& e) {
  json j;
  j["envs"] = e.envs;
  j["mounts"] = json::array();
  for (const auto& m : e.mounts)
    j["mounts"].push_back({{"container_path", m.container_path}, {"host_path", m.host_path}, {"read_only", m.read_only}});
  j["devices"] = json::array();
  for (const auto& d : e.devices)
    j["devices"].push_back({{"container_path", d.container_path}, {"host_path", d.host_path}, {"permissions", d.permissions},
                                 {"only_if_present", d.only_if_present}});
  j["annotations"] = e.annotations;
  j["cdi_devices"] = e.cdi_devices;
  return j;
}

struct Case {
  std::string name;
  std::function<void(Config&)> configure;
};

const std::vector<Case>& cases() {
  using S = DeviceListStrategy;
  static const std::vector<Case> all = {
      {"envvar-uuid", [](Config&) {}},
      {"envvar-index", [](Config& c) { c.device_id_strategy = DeviceIdStrategy::Index; }},
      {"volume-mounts", [](Config& c) { c.device_list_strategy = {S::VolumeMounts}; }},
      {"cdi-annotations", [](Config& c) { c.device_list_strategy = {S::CdiAnnotations}; }},
      {"cdi-cri-index",
       [](Config& c) {
         c.device_list_strategy = {S::CdiCri};
         c.device_id_strategy = DeviceIdStrategy::Index;
       }},
      {"envvar-volume-mounts-specs",
       [](Config& c) {
         c.device_list_strategy = {S::EnvVar, S::VolumeMounts};
         c.pass_device_specs = true;
         c.nvidia_driver_root = "/run/nvidia/driver";
       }},
      {"all-strategies-specs",
       [](Config& c) {
         c.device_list_strategy = {S::EnvVar, S::VolumeMounts, S::CdiAnnotations, S::CdiCri};
         c.pass_device_specs = true;
         c.nvidia_dev_root = "/host";
         c.cdi_annotation_prefix = "example.com/";
         c.cdi_kind = "example.com/gpu";
         c.gds_enabled = true;
         c.mofed_enabled = true;
       }},
  };
  return all;
}

struct Node {
  std::string name;
  Inventory inventory;
  std::vector<BackingDevice> request;
};

std::vector<Node> nodes() {
  // The request order is deliberately not the inventory order: responses must follow the request.
  return {{"two-gpus", two_gpu_node(), {{1, std::nullopt}, {0, std::nullopt}}},
          {"mig", mig_node(), {{0, 1}, {0, 0}, {1, std::nullopt}}}};
}

void check_golden(const std::string& file, const json& actual) {
  const std::string path = std::string(KGPU_FIXTURES_DIR) + "/golden/edits/" + file;
  if (std::getenv("KGPU_UPDATE_GOLDEN")) {
    std::ofstream(path) << actual.dump(2) << "\n";
  }
  std::ifstream in(path);
  ASSERT_TRUE(in) << "missing golden file " << path << " (run with KGPU_UPDATE_GOLDEN=1)";
  json expected = json::parse(in);
  EXPECT_EQ(actual, expected) << file << " differs; actual:\n" << actual.dump(2);
}

TEST(NvidiaEditsGolden, EveryStrategyCombinationOnTwoNodes) {
  for (const auto& node : nodes())
    for (const auto& c : cases()) {
      SCOPED_TRACE(node.name + "/" + c.name);
      Config config;
      c.configure(config);
      ContainerEdits edits = nvidia_device_edits(config, node.inventory, node.request);
      check_golden(node.name + "-" + c.name + ".json", to_json(edits));
      // Deterministic: the same request gives the same response.
      EXPECT_EQ(nvidia_device_edits(config, node.inventory, node.request), edits);
    }
}

TEST(NvidiaEdits, EnvVarListsIdsInRequestOrder) {
  Config config;
  auto edits = nvidia_device_edits(config, two_gpu_node(), {{1, std::nullopt}, {0, std::nullopt}});
  EXPECT_EQ(edits.envs.at("NVIDIA_VISIBLE_DEVICES"),
            "GPU-22222222-2222-2222-2222-222222222222,GPU-11111111-1111-1111-1111-111111111111");
  EXPECT_TRUE(edits.mounts.empty());
  EXPECT_TRUE(edits.devices.empty());
  EXPECT_TRUE(edits.annotations.empty());
}

TEST(NvidiaEdits, DuplicateDevicesAppearOnce) {
  Config config;
  config.device_id_strategy = DeviceIdStrategy::Index;
  config.pass_device_specs = true;
  auto edits = nvidia_device_edits(config, mig_node(), {{0, 1}, {0, 1}, {0, 0}});
  EXPECT_EQ(edits.envs.at("NVIDIA_VISIBLE_DEVICES"), "0:1,0:0");
  // The parent node /dev/nvidia2 is shared by both MIG devices and listed once.
  std::vector<std::string> paths;
  for (const auto& d : edits.devices) paths.push_back(d.container_path);
  EXPECT_EQ(paths, (std::vector<std::string>{"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                                             "/dev/nvidia-modeset", "/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap21",
                                             "/dev/nvidia-caps/nvidia-cap22", "/dev/nvidia-caps/nvidia-cap12",
                                             "/dev/nvidia-caps/nvidia-cap13"}));
}

// Issue 21: the control nodes are never assumed from discovery. Every one of the four is offered,
// marked only-if-present, and the Allocate path keeps exactly those that exist at that moment.
TEST(NvidiaEdits, ControlNodesAreMarkedOnlyIfPresentWhateverDiscoverySaw) {
  Config config;
  config.pass_device_specs = true;
  for (Inventory inv : {two_gpu_node(), mig_node()}) {
    inv.control_nodes = {{"/dev/nvidiactl"}};  // what discovery saw no longer matters
    auto edits = nvidia_device_edits(config, inv, {{1, std::nullopt}});
    ASSERT_EQ(edits.devices.size(), 5u);
    const std::vector<std::string> control = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
                                              "/dev/nvidia-modeset"};
    for (size_t i = 0; i < control.size(); ++i) {
      EXPECT_EQ(edits.devices[i].container_path, control[i]);
      EXPECT_TRUE(edits.devices[i].only_if_present) << control[i];
    }
    EXPECT_FALSE(edits.devices[4].only_if_present) << "the GPU's own node was found by discovery";
  }
}

TEST(ResolveOptionalDevices, KeepsOnlyPresentNodesAndClearsTheMark) {
  Config config;
  config.pass_device_specs = true;
  config.nvidia_driver_root = "/host";
  auto edits = nvidia_device_edits(config, two_gpu_node(), {{0, std::nullopt}});
  std::vector<std::string> asked;
  resolve_optional_devices(edits, [&](const std::string& host_path) {
    asked.push_back(host_path);
    return host_path != "/host/dev/nvidia-uvm" && host_path != "/host/dev/nvidia-modeset";
  });
  // Only the marked specs are checked (a handful of stats), by host path.
  EXPECT_EQ(asked, (std::vector<std::string>{"/host/dev/nvidiactl", "/host/dev/nvidia-uvm",
                                             "/host/dev/nvidia-uvm-tools", "/host/dev/nvidia-modeset"}));
  std::vector<std::string> paths;
  for (const auto& d : edits.devices) {
    paths.push_back(d.container_path);
    EXPECT_FALSE(d.only_if_present);
  }
  EXPECT_EQ(paths, (std::vector<std::string>{"/dev/nvidiactl", "/dev/nvidia-uvm-tools", "/dev/nvidia0"}));
}

TEST(NvidiaEdits, HostPathsUnderTheDevRoot) {
  Config config;
  config.pass_device_specs = true;
  config.nvidia_driver_root = "/run/nvidia/driver/";
  auto edits = nvidia_device_edits(config, two_gpu_node(), {{1, std::nullopt}});
  EXPECT_EQ(edits.devices.back().host_path, "/run/nvidia/driver/dev/nvidia1");
  config.nvidia_dev_root = "/";
  edits = nvidia_device_edits(config, two_gpu_node(), {{1, std::nullopt}});
  EXPECT_EQ(edits.devices.back().host_path, "/dev/nvidia1");
  EXPECT_EQ(edits.devices.back().permissions, "rw");
}

TEST(NvidiaEdits, OnlyCdiStrategiesSetVoid) {
  Config config;
  config.device_list_strategy = {DeviceListStrategy::CdiCri};
  auto edits = nvidia_device_edits(config, two_gpu_node(), {{0, std::nullopt}});
  EXPECT_EQ(edits.envs.at("NVIDIA_VISIBLE_DEVICES"), "void");
  EXPECT_EQ(edits.cdi_devices,
            std::vector<std::string>{"k8s.device-plugin.nvidia.com/gpu=GPU-11111111-1111-1111-1111-111111111111"});
  config.device_list_strategy.push_back(DeviceListStrategy::EnvVar);
  edits = nvidia_device_edits(config, two_gpu_node(), {{0, std::nullopt}});
  EXPECT_EQ(edits.envs.at("NVIDIA_VISIBLE_DEVICES"), "GPU-11111111-1111-1111-1111-111111111111");
}

TEST(NvidiaEdits, AnnotationKeyIsDeterministicPerDeviceSet) {
  const std::vector<std::string> a = {"k/gpu=0", "k/gpu=1"};
  const std::vector<std::string> b = {"k/gpu=1", "k/gpu=0"};
  EXPECT_EQ(cdi_annotation_key("cdi.k8s.io/", a), cdi_annotation_key("cdi.k8s.io/", a));
  EXPECT_NE(cdi_annotation_key("cdi.k8s.io/", a), cdi_annotation_key("cdi.k8s.io/", b));
  EXPECT_NE(cdi_annotation_key("cdi.k8s.io/", {"ab", "c"}), cdi_annotation_key("cdi.k8s.io/", {"a", "bc"}));
  const std::string key = cdi_annotation_key("cdi.k8s.io/", a);
  EXPECT_TRUE(key.starts_with("cdi.k8s.io/kgpu_"));
  EXPECT_EQ(key.size(), std::string("cdi.k8s.io/kgpu_").size() + 16);
}

TEST(NvidiaEdits, VolumeMountsOverrideTheEnvVarValue) {
  Config config;
  config.device_list_strategy = {DeviceListStrategy::EnvVar, DeviceListStrategy::VolumeMounts};
  config.device_id_strategy = DeviceIdStrategy::Index;
  auto edits = nvidia_device_edits(config, two_gpu_node(), {{1, std::nullopt}, {0, std::nullopt}});
  EXPECT_EQ(edits.envs.at("NVIDIA_VISIBLE_DEVICES"), "/var/run/nvidia-container-devices");
  ASSERT_EQ(edits.mounts.size(), 2u);
  EXPECT_EQ(edits.mounts[0], (Mount{"/var/run/nvidia-container-devices/1", "/dev/null", true}));
  EXPECT_EQ(edits.mounts[1], (Mount{"/var/run/nvidia-container-devices/0", "/dev/null", true}));
}


// Issue 21, drop-in compatibility: the whole Allocate path (plan -> advertised IDs -> allocate) for
// deviceIDStrategy uuid and index, on a whole-GPU node, the same node time-sliced and a MIG node.
// The kubelet IDs must be the same for both settings (stable UUIDs, UUID-based replica and MIG
// IDs); only what the runtime sees (NVIDIA_VISIBLE_DEVICES, volume-mount names, CDI names and
// annotations) follows the strategy, in every list strategy.
namespace allocate_golden {

struct Fleet {
  std::string name;
  Inventory inventory;
  std::string resource;
  std::function<void(Config&)> configure;
};

std::vector<Fleet> fleets() {
  return {{"two-gpus", two_gpu_node(), "nvidia.com/gpu", [](Config&) {}},
          {"two-gpus-time-sliced", two_gpu_node(), "nvidia.com/gpu",
           [](Config& c) { c.time_slicing.resources = {{"nvidia.com/gpu", "", 2, {}}}; }},
          {"mig-mixed", mig_node(), "nvidia.com/mig-3g.20gb", [](Config& c) { c.mig_strategy = MigStrategy::Mixed; }}};
}

json allocate_all_strategies(const Fleet& fleet, DeviceIdStrategy id_strategy) {
  using S = DeviceListStrategy;
  json out;
  Config base;
  fleet.configure(base);
  base.device_id_strategy = id_strategy;
  const ResourcePlan p = plan(base, fleet.inventory);
  const Resource* r = p.find(fleet.resource);
  if (!r) return "missing resource " + fleet.resource;
  std::vector<std::string> advertised, request;
  for (const auto& d : r->devices) advertised.push_back(d.id);
  // The last and the first device, so request order differs from inventory order.
  request = {advertised.back(), advertised.front()};
  out["advertised_ids"] = advertised;
  out["requested_ids"] = request;
  for (const auto& [label, strategy] : std::vector<std::pair<std::string, S>>{
           {"envvar", S::EnvVar}, {"volume-mounts", S::VolumeMounts}, {"cdi-annotations", S::CdiAnnotations},
           {"cdi-cri", S::CdiCri}}) {
    Config c = base;
    c.device_list_strategy = {strategy};
    auto edits = allocate(c, fleet.inventory, *r, request, [](const std::string&) { return true; });
    out[label] = edits ? to_json(*edits) : json(edits.error().message);
  }
  return out;
}

}  // namespace allocate_golden

TEST(AllocateGolden, DeviceIdStrategyChangesOnlyRuntimeValues) {
  for (const auto& fleet : allocate_golden::fleets()) {
    SCOPED_TRACE(fleet.name);
    const json uuid = allocate_golden::allocate_all_strategies(fleet, DeviceIdStrategy::Uuid);
    const json index = allocate_golden::allocate_all_strategies(fleet, DeviceIdStrategy::Index);
    check_golden("allocate-" + fleet.name + "-uuid.json", uuid);
    check_golden("allocate-" + fleet.name + "-index.json", index);
    // The kubelet sees exactly the same IDs whatever the strategy, and they are UUID-based.
    EXPECT_EQ(uuid["advertised_ids"], index["advertised_ids"]);
    for (const auto& id : index["advertised_ids"]) {
      const std::string s = id.get<std::string>();
      EXPECT_TRUE(s.starts_with("GPU-") || s.starts_with("MIG-")) << s;
    }
  }
}

}  // namespace
}  // namespace kgpu
