// End to end: every way kgpu hands devices out — device-list strategies (volume mounts, CDI
// annotations, CDI names in the CRI), time-slicing, MIG strategies, and the sysfs backends (AMD,
// Intel, a mixed NVIDIA + AMD node) — each through the real binary and the kubelet simulator.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/file.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "core/unique_fd.h"
#include "e2e/sim_fixture.h"

namespace kgpu::test {
namespace {

const std::string kGpu = "nvidia.com/gpu";
std::string sysfs_fixture(const std::string& name) { return std::string(KGPU_SYSFS_FIXTURES_DIR) + "/" + name; }

class ServeModesE2E : public SimE2E {
 protected:
  // First `n` device IDs of `resource` once it is streaming `count` healthy devices.
  std::vector<std::string> ids_when_ready(const ChildProcess& plugin, const std::string& resource, size_t count) {
    EXPECT_TRUE(wait_healthy(resource, count)) << diagnostics(plugin);
    auto snap = sim->snapshot();
    const auto* r = snap.find(resource);
    return r ? r->device_ids() : std::vector<std::string>{};
  }
};

TEST_F(ServeModesE2E, VolumeMountsStrategy) {
  PluginOptions options;
  options.extra_args = {"--device-list-strategy", "volume-mounts"};
  auto plugin = start(options);
  auto ids = ids_when_ready(*plugin, kGpu, 8);
  ASSERT_GE(ids.size(), 2u);
  auto edits = sim->allocate(kGpu, {ids[1], ids[0]});
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  EXPECT_EQ(edits->envs["NVIDIA_VISIBLE_DEVICES"], "/var/run/nvidia-container-devices");
  ASSERT_EQ(edits->mounts.size(), 2u);
  EXPECT_EQ(edits->mounts[0].container_path, "/var/run/nvidia-container-devices/" + ids[1]);  // request order
  EXPECT_EQ(edits->mounts[0].host_path, "/dev/null");
}

TEST_F(ServeModesE2E, CdiAnnotationsStrategyWritesTheSpecAndAnnotates) {
  std::string spec_dir = work.file("cdi");
  PluginOptions options;
  // The daemon scans the driver root it sees (containerDriverRoot) for the libraries the spec lists.
  options.extra_args = {"--device-list-strategy", "cdi-annotations", "--cdi-spec-dir", spec_dir,
                        "--container-driver-root", std::string(KGPU_FIXTURES_DIR) + "/driver-root"};
  auto plugin = start(options);
  auto ids = ids_when_ready(*plugin, kGpu, 8);
  ASSERT_FALSE(ids.empty());
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("cdi: wrote") != std::string::npos; }, 20s))
      << diagnostics(*plugin);
  std::vector<std::string> specs;
  for (const auto& e : std::filesystem::directory_iterator(spec_dir)) specs.push_back(read_file(e.path()));
  ASSERT_EQ(specs.size(), 1u);
  EXPECT_NE(specs[0].find("k8s.device-plugin.nvidia.com/gpu"), std::string::npos) << specs[0];
  EXPECT_NE(specs[0].find(ids[0]), std::string::npos);  // one CDI device per GPU, named by UUID

  auto edits = sim->allocate(kGpu, {ids[0]});
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  ASSERT_EQ(edits->annotations.size(), 1u);
  const auto& [key, value] = *edits->annotations.begin();
  EXPECT_EQ(key.rfind("cdi.k8s.io/kgpu_", 0), 0u) << key;
  EXPECT_EQ(value, "k8s.device-plugin.nvidia.com/gpu=" + ids[0]);
  EXPECT_TRUE(edits->cdi_devices.empty());
}

TEST_F(ServeModesE2E, CdiCriStrategyFillsCdiDevices) {
  PluginOptions options;
  options.extra_args = {"--device-list-strategy", "cdi-cri", "--cdi-spec-dir", work.file("cdi"),
                        "--container-driver-root", std::string(KGPU_FIXTURES_DIR) + "/driver-root"};
  auto plugin = start(options);
  auto ids = ids_when_ready(*plugin, kGpu, 8);
  ASSERT_GE(ids.size(), 2u);
  auto edits = sim->allocate(kGpu, {ids[0], ids[1]});
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  EXPECT_EQ(edits->cdi_devices, (std::vector<std::string>{"k8s.device-plugin.nvidia.com/gpu=" + ids[0],
                                                          "k8s.device-plugin.nvidia.com/gpu=" + ids[1]}));
  // CDI injects the devices; "void" stops a legacy-mode runtime from also injecting every GPU.
  EXPECT_EQ(edits->envs["NVIDIA_VISIBLE_DEVICES"], "void");
}

TEST_F(ServeModesE2E, TwoGpusFiveReplicasRenamedByDefault) {
  std::string config = work.write("ts.yaml", R"(version: v1
sharing:
  timeSlicing:
    renameByDefault: true
    resources:
    - name: nvidia.com/gpu
      replicas: 5
)");
  PluginOptions options;
  options.fleet_file = "pcie-t4x2.yaml";
  options.config_file = config;
  auto plugin = start(options);
  auto ids = ids_when_ready(*plugin, "nvidia.com/gpu.shared", 10);
  ASSERT_EQ(ids.size(), 10u);
  EXPECT_EQ(sim->snapshot().find(kGpu), nullptr);  // no plain nvidia.com/gpu
  // Distributed placement: a 2-replica request lands on two distinct GPUs.
  auto chosen = sim->preferred("nvidia.com/gpu.shared", ids, {}, 2);
  ASSERT_TRUE(chosen.ok()) << chosen.error().message;
  std::set<std::string> gpus;
  for (const auto& id : *chosen) gpus.insert(id.substr(0, id.find("::")));
  EXPECT_EQ(gpus.size(), 2u);
  auto edits = sim->allocate("nvidia.com/gpu.shared", *chosen);
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  EXPECT_EQ(edits->envs["NVIDIA_VISIBLE_DEVICES"], (*chosen)[0].substr(0, (*chosen)[0].find("::")) + "," +
                                                      (*chosen)[1].substr(0, (*chosen)[1].find("::")));
}

TEST_F(ServeModesE2E, MpsResourceWaitsForItsControlDaemonThenCarriesLimits) {
  std::string mps_root = work.file("mps");
  std::string config = work.write("mps.yaml", "version: v1\nflags:\n  mpsRoot: " + mps_root + R"(
sharing:
  mps:
    resources:
    failRequestsGreaterThanOne: false
    resources:
    - name: nvidia.com/gpu
      replicas: 4
)");
  PluginOptions options;
  options.config_file = config;
  auto plugin = start(options);
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("withheld until its MPS control daemon") != std::string::npos; },
                         20s))
      << diagnostics(*plugin);
  EXPECT_EQ(sim->snapshot().find(kGpu), nullptr);  // not advertised while `kgpu mps-daemon` is not ready

  // What `kgpu mps-daemon` writes once the limits are set, and keeps flock'ed while it runs.
  std::string marker = work.write("mps/nvidia.com/gpu/.ready", "");
  UniqueFd marker_lock(::open(marker.c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_EQ(::flock(marker_lock.get(), LOCK_EX), 0);
  auto ids = ids_when_ready(*plugin, kGpu, 32);
  ASSERT_EQ(ids.size(), 32u);
  auto one = sim->allocate(kGpu, {ids[0]});
  ASSERT_TRUE(one.ok()) << one.error().message;
  EXPECT_FALSE(one->envs["CUDA_MPS_PIPE_DIRECTORY"].empty());
  EXPECT_EQ(one->envs["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"], "25");  // one replica of a 4-way share
  // Two replicas of the same GPU: twice the share, in threads and in pinned memory.
  std::string gpu = ids[0].substr(0, ids[0].find("::"));
  std::vector<std::string> same_gpu;
  for (const auto& id : ids)
    if (id.rfind(gpu + "::", 0) == 0 && same_gpu.size() < 2) same_gpu.push_back(id);
  auto two = sim->allocate(kGpu, same_gpu);
  ASSERT_TRUE(two.ok()) << two.error().message;
  EXPECT_EQ(two->envs["CUDA_MPS_ACTIVE_THREAD_PERCENTAGE"], "50");
  EXPECT_NE(one->envs["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"], two->envs["CUDA_MPS_PINNED_DEVICE_MEM_LIMIT"]);
}

TEST_F(ServeModesE2E, MigSingleAdvertisesMigDevicesAsGpus) {
  PluginOptions options;
  options.fleet_file = "a100-mig-single.yaml";
  options.extra_args = {"--mig-strategy=single", "--pass-device-specs"};
  auto plugin = start(options);
  ASSERT_TRUE(sim->wait_for([](const sim::Snapshot& s) { return s.ready(kGpu); }, 20s)) << diagnostics(*plugin);
  auto ids = sim->snapshot().find(kGpu)->device_ids();
  ASSERT_FALSE(ids.empty());
  for (const auto& id : ids) EXPECT_EQ(id.rfind("MIG-", 0), 0u) << id;
  auto edits = sim->allocate(kGpu, {ids[0]});
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  EXPECT_EQ(edits->envs["NVIDIA_VISIBLE_DEVICES"], ids[0]);
  bool caps = false;
  for (const auto& d : edits->devices) caps |= d.container_path.find("/dev/nvidia-caps/nvidia-cap") == 0;
  EXPECT_TRUE(caps) << "MIG capability device nodes are passed with passDeviceSpecs";
}

TEST_F(ServeModesE2E, MigMixedAdvertisesOneResourcePerProfile) {
  PluginOptions options;
  options.fleet_file = "a100-mig-mixed.yaml";
  options.extra_args = {"--mig-strategy=mixed"};
  auto plugin = start(options);
  // Mixed layout of the fleet: 1g.5gb x 9, 2g.10gb x 4, 3g.20gb x 1, and one GPU without MIG.
  ASSERT_TRUE(wait_healthy("nvidia.com/mig-1g.5gb", 9)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_healthy("nvidia.com/mig-2g.10gb", 4)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_healthy("nvidia.com/mig-3g.20gb", 1)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_healthy(kGpu, 1)) << diagnostics(*plugin);
  auto id = sim->snapshot().find("nvidia.com/mig-3g.20gb")->device_ids()[0];
  auto edits = sim->allocate("nvidia.com/mig-3g.20gb", {id});
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  EXPECT_EQ(edits->envs["NVIDIA_VISIBLE_DEVICES"], id);
}

// On a100-mig-mixed GPU 0 has one 1g.5gb device and GPU 1 seven: `packed` gives both of a
// two-device request from GPU 1; the default (distributed, as NVIDIA) and kgpu's
// --mig-allocation-policy=spread alias give two parents.
TEST_F(ServeModesE2E, MigAllocationPolicyOnMixedMig) {
  const std::set<std::string> gpu1 = {
      "MIG-90237de7-232a-49de-bed4-32292ed99a49", "MIG-521b55ad-a989-48e5-9645-f8997a98714f",
      "MIG-9e450909-a8d1-4dea-9ddf-c65e144b2080", "MIG-13d38b63-47e3-4c09-b70c-349f6dcb6633",
      "MIG-1e527ff9-160e-47a4-89f1-c7e23916e1df", "MIG-c51ae08b-3727-4581-be57-821b6396e022",
      "MIG-f0cbb970-378b-470c-b642-8c7a968a89b8"};
  const std::string mig = "nvidia.com/mig-1g.5gb";
  struct Case {
    std::vector<std::string> args;
    size_t on_gpu1;
  };
  int runs = 0;  // one plugin after the other, each registering anew
  for (const Case& c : {Case{{"--shared-devices-allocation-policy=packed"}, 2},
                        Case{{"--mig-allocation-policy=same-parent"}, 2}, Case{{}, 1},
                        Case{{"--shared-devices-allocation-policy=packed", "--mig-allocation-policy=spread"}, 1}}) {
    ++runs;
    PluginOptions options;
    options.fleet_file = "a100-mig-mixed.yaml";
    options.extra_args = {"--mig-strategy=mixed"};
    options.extra_args.insert(options.extra_args.end(), c.args.begin(), c.args.end());
    auto plugin = start(options);
    ASSERT_TRUE(wait_healthy(mig, 9, runs)) << diagnostics(*plugin);
    auto chosen = sim->preferred(mig, sim->snapshot().find(mig)->device_ids(), {}, 2);
    ASSERT_TRUE(chosen.ok()) << chosen.error().message;
    ASSERT_EQ(chosen->size(), 2u);
    EXPECT_EQ(static_cast<size_t>(std::count_if(chosen->begin(), chosen->end(),
                                                [&](const std::string& id) { return gpu1.count(id) > 0; })),
              c.on_gpu1)
        << ::testing::PrintToString(c.args) << ": " << ::testing::PrintToString(*chosen);
    plugin->signal(SIGTERM);
    ASSERT_TRUE(plugin->wait_exit(20s).has_value()) << diagnostics(*plugin);
  }
}

TEST_F(ServeModesE2E, AmdNodeFromSysfs) {
  PluginOptions options;
  options.fleet_file = "";
  options.fake_nvml = false;
  options.node_dir = sysfs_fixture("amd-mi210");
  auto plugin = start(options);
  ASSERT_TRUE(sim->wait_for([](const sim::Snapshot& s) { return s.ready("amd.com/gpu"); }, 20s)) << diagnostics(*plugin);
  auto ids = sim->snapshot().find("amd.com/gpu")->device_ids();
  ASSERT_FALSE(ids.empty());
  auto edits = sim->allocate("amd.com/gpu", {ids[0]});
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  std::set<std::string> nodes;
  for (const auto& d : edits->devices) nodes.insert(d.container_path);
  EXPECT_EQ(nodes.count("/dev/kfd"), 1u);
  EXPECT_TRUE(std::any_of(nodes.begin(), nodes.end(), [](const std::string& p) { return p.find("/dev/dri/renderD") == 0; }));
  EXPECT_EQ(sim->snapshot().find(kGpu), nullptr);
}

TEST_F(ServeModesE2E, AmdGpuThatDisappearsIsUnhealthyAndComesBack) {
  // A private copy of the MI210 node, so the test can unbind a GPU.
  std::string node = work.file("amd-node");
  std::filesystem::copy(sysfs_fixture("amd-mi210"), node,
                        std::filesystem::copy_options::recursive | std::filesystem::copy_options::copy_symlinks);
  PluginOptions options;
  options.fleet_file = "";
  options.fake_nvml = false;
  options.node_dir = node;
  auto plugin = start(options);
  const std::string amd = "amd.com/gpu";
  ASSERT_TRUE(wait_healthy(amd, 2)) << diagnostics(*plugin);
  ASSERT_TRUE(wait_until([&] { return plugin->stderr_text().find("sysfs health: watching") != std::string::npos; }, 20s))
      << diagnostics(*plugin);

  // The driver lets go of 0000:03:00.0: its driver link goes, then its /dev/dri nodes.
  const std::string link = node + "/sys/bus/pci/drivers/amdgpu/0000:03:00.0";
  const std::string target = std::filesystem::read_symlink(link).string();
  std::filesystem::remove(link);
  std::filesystem::remove(node + "/dev/dri/renderD128");
  ASSERT_TRUE(wait_healthy(amd, 1, 1, 2)) << diagnostics(*plugin);
  EXPECT_EQ(health_of(amd, "0000:03:00.0"), "Unhealthy");
  EXPECT_TRUE(sim->allocate(amd, {"0000:83:00.0"}).ok());

  // And binds it again.
  std::filesystem::create_symlink(target, link);
  std::ofstream(node + "/dev/dri/renderD128").flush();
  ASSERT_TRUE(wait_healthy(amd, 2, 1, 2)) << diagnostics(*plugin);
}

TEST_F(ServeModesE2E, IntelNodeServesI915AndXe) {
  PluginOptions options;
  options.fleet_file = "";
  options.fake_nvml = false;
  options.node_dir = sysfs_fixture("intel-flex-arc");
  auto plugin = start(options);
  ASSERT_TRUE(sim->wait_for([](const sim::Snapshot& s) { return s.ready("gpu.intel.com/i915") && s.ready("gpu.intel.com/xe"); },
                            20s))
      << diagnostics(*plugin);
  auto id = sim->snapshot().find("gpu.intel.com/xe")->device_ids()[0];
  auto edits = sim->allocate("gpu.intel.com/xe", {id});
  ASSERT_TRUE(edits.ok()) << edits.error().message;
  EXPECT_FALSE(edits->devices.empty());
}

TEST_F(ServeModesE2E, MixedNvidiaAndAmdNodeServesBoth) {
  PluginOptions options;
  options.fleet_file = "pcie-t4x2.yaml";
  options.node_dir = sysfs_fixture("mixed-nvidia-amd");
  auto plugin = start(options);
  ASSERT_TRUE(wait_healthy(kGpu, 2)) << diagnostics(*plugin);
  ASSERT_TRUE(sim->wait_for([](const sim::Snapshot& s) { return s.ready("amd.com/gpu"); }, 20s)) << diagnostics(*plugin);
  auto amd = sim->snapshot().find("amd.com/gpu")->device_ids();
  EXPECT_TRUE(sim->allocate("amd.com/gpu", {amd[0]}).ok());
  EXPECT_TRUE(sim->allocate(kGpu, {sim->snapshot().find(kGpu)->device_ids()[0]}).ok());
}

}  // namespace
}  // namespace kgpu::test
