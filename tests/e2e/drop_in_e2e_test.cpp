// End to end, issue 21: kgpu as a drop-in for NVIDIA's plugin. deviceIDStrategy=index changes only
// what the runtime sees (the kubelet keeps UUIDs, so a checkpoint written with UUIDs stays valid),
// and passDeviceSpecs hands out the control nodes only when they exist at Allocate time.
#include <gtest/gtest.h>

#include <algorithm>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <set>

#include "e2e/sim_fixture.h"

namespace kgpu::test {
namespace {

namespace fs = std::filesystem;
const std::string kGpu = "nvidia.com/gpu";

class DropInE2E : public SimE2E {
 protected:
  std::vector<std::string> ids_when_ready(const ChildProcess& plugin, size_t count) {
    EXPECT_TRUE(wait_healthy(kGpu, count)) << diagnostics(plugin);
    auto snap = sim->snapshot();
    const auto* r = snap.find(kGpu);
    return r ? r->device_ids() : std::vector<std::string>{};
  }
};

TEST_F(DropInE2E, IndexStrategyAdvertisesUuidsAndPassesIndicesToTheRuntime) {
  PluginOptions options;
  options.extra_args = {"--device-id-strategy", "index", "--device-list-strategy", "envvar"};
  auto plugin = start(options);
  const auto ids = ids_when_ready(*plugin, 8);
  ASSERT_EQ(ids.size(), 8u);
  for (const auto& id : ids) EXPECT_TRUE(id.starts_with("GPU-")) << "the kubelet must see UUIDs, got " << id;
  // Inventory order is NVML index order on the fake DGX: ids[i] is GPU i.
  auto edits = sim->allocate(kGpu, {ids[5], ids[2]});
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  EXPECT_EQ(edits->envs["NVIDIA_VISIBLE_DEVICES"], "5,2");
  // The runtime-facing index never shows up as a kubelet ID.
  EXPECT_FALSE(sim->allocate(kGpu, {"5"}).ok());
}

TEST_F(DropInE2E, IndexStrategyVolumeMountNamesAreIndices) {
  PluginOptions options;
  options.extra_args = {"--device-id-strategy", "index", "--device-list-strategy", "volume-mounts"};
  auto plugin = start(options);
  const auto ids = ids_when_ready(*plugin, 8);
  ASSERT_EQ(ids.size(), 8u);
  EXPECT_TRUE(ids[7].starts_with("GPU-")) << ids[7];
  auto edits = sim->allocate(kGpu, {ids[7]});
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  ASSERT_EQ(edits->mounts.size(), 1u);
  EXPECT_EQ(edits->mounts[0].container_path, "/var/run/nvidia-container-devices/7");
}

// A node that ran with UUIDs (NVIDIA's plugin with either strategy, or kgpu with uuid) has a kubelet
// checkpoint full of UUID IDs. After kgpu takes over with `index`, those allocations stay valid:
// the same IDs are advertised and Allocate accepts them.
TEST_F(DropInE2E, CheckpointWithUuidIdsStaysValidAfterSwitchingToIndex) {
  std::vector<std::string> checkpoint;
  {
    PluginOptions before;
    before.name = "uuid";
    auto plugin = start(before);
    const auto ids = ids_when_ready(*plugin, 8);
    ASSERT_EQ(ids.size(), 8u);
    checkpoint = {ids[1], ids[6]};  // what the kubelet recorded for a running pod
    plugin->signal(SIGTERM);
    ASSERT_TRUE(plugin->wait_exit(20s).has_value());
  }
  PluginOptions after;
  after.name = "index";
  after.extra_args = {"--device-id-strategy", "index"};
  auto plugin = start(after);
  ASSERT_TRUE(wait_healthy(kGpu, 8, 2)) << diagnostics(*plugin);  // re-registered by the new plugin
  const auto ids = sim->snapshot().find(kGpu)->device_ids();
  for (const auto& id : checkpoint) EXPECT_NE(std::find(ids.begin(), ids.end(), id), ids.end()) << id;
  auto edits = sim->allocate(kGpu, checkpoint);
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  EXPECT_EQ(edits->envs["NVIDIA_VISIBLE_DEVICES"], "1,6");
}

// /dev/nvidia-uvm* appear when the UVM module loads, often after the plugin starts; a DeviceSpec
// whose host path is missing makes container creation fail. So each control node is checked at
// Allocate time, under the device root.
TEST_F(DropInE2E, PassDeviceSpecsLeavesOutControlNodesThatDoNotExist) {
  const std::string node = work.file("node");
  fs::copy(std::string(KGPU_FIXTURES_DIR) + "/driver-root", node,
           fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  fs::create_directories(node + "/sys/module/nvidia");  // the NVIDIA driver is loaded
  fs::remove(node + "/dev/nvidia-uvm");
  ASSERT_FALSE(fs::exists(node + "/dev/nvidia-modeset"));

  PluginOptions options;
  options.node_dir = node;
  options.extra_args = {"--pass-device-specs"};
  auto plugin = start(options);
  const auto ids = ids_when_ready(*plugin, 8);
  ASSERT_FALSE(ids.empty());
  auto paths_of = [&](const std::vector<std::string>& request) {
    std::set<std::string> paths;
    auto edits = sim->allocate(kGpu, request);
    EXPECT_TRUE(edits.ok()) << edits.error().message;
    if (edits)
      for (const auto& d : edits->devices) {
        paths.insert(d.container_path);
        EXPECT_EQ(d.host_path, node + d.container_path);
      }
    return paths;
  };
  auto paths = paths_of({ids[0]});
  EXPECT_EQ(paths.count("/dev/nvidiactl"), 1u);
  EXPECT_EQ(paths.count("/dev/nvidia-uvm-tools"), 1u);
  EXPECT_EQ(paths.count("/dev/nvidia-uvm"), 0u) << "missing on the host: must be left out";
  EXPECT_EQ(paths.count("/dev/nvidia-modeset"), 0u);

  // The UVM module loads later: the next Allocate sees the node, without a restart or a reload.
  std::ofstream(node + "/dev/nvidia-uvm").flush();
  paths = paths_of({ids[1]});
  EXPECT_EQ(paths.count("/dev/nvidia-uvm"), 1u);
}

}  // namespace
}  // namespace kgpu::test
