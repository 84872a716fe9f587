// nvidia_device_edits: golden files of whole ContainerEdits per strategy combination on two nodes,
// plus focused checks. Regenerate goldens with KGPU_UPDATE_GOLDEN=1 (then review the diff).
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "plan/device_edits.h"
#include "plan/nvidia_edits_cdi.h"
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
    j["devices"].push_back({{"container_path", d.container_path}, {"host_path", d.host_path}, {"permissions", d.permissions}});
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

TEST(NvidiaEdits, ModesetOnlyWhenTheBackendSawIt) {
  Config config;
  config.pass_device_specs = true;
  Inventory inv = two_gpu_node();  // control_nodes unknown
  auto edits = nvidia_device_edits(config, inv, {{0, std::nullopt}});
  ASSERT_EQ(edits.devices.size(), 4u);
  EXPECT_EQ(edits.devices[2].container_path, "/dev/nvidia-uvm-tools");
  EXPECT_EQ(edits.devices[3].container_path, "/dev/nvidia0");
  inv.control_nodes = {{"/dev/nvidia-modeset"}, {"/dev/nvidiactl"}};
  edits = nvidia_device_edits(config, inv, {{0, std::nullopt}});
  ASSERT_EQ(edits.devices.size(), 3u);
  EXPECT_EQ(edits.devices[0].container_path, "/dev/nvidiactl");
  EXPECT_EQ(edits.devices[1].container_path, "/dev/nvidia-modeset");
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

}  // namespace
}  // namespace kgpu
