// Dynamic MIG in the fake NVML: GPU instances created at a placement and compute instances inside
// them, destruction, the driver's placement rules and its answers when they are broken.
#include <gmock/gmock.h>

#include <filesystem>
#include <set>

#include "fake-nvml/cap_files.h"
#include "nvml/nvml_abi_dynamic_mig.h"
#include "nvml_under_test.h"

namespace kgpu::fake_nvml::testing {
namespace {

// GPU 0: an empty H100 with MIG on; GPU 1: an A100 whose MIG mode waits for a reset; GPU 2: an
// H100 with MIG off.
constexpr const char* kFleet = R"(node: {driver_version: "580.65.06", cuda_driver_version: 13000}
defaults:
  name: NVIDIA H100 80GB HBM3
  architecture: hopper
  compute_capability: "9.0"
  memory: {total_mib: 81559}
  pci: {device_id: 0x2330}
  sm_count: 132
  mig: {capable: true, mode: enabled, profiles: h100-80gb}
gpus:
  - {uuid: GPU-00000000-0000-4000-8000-000000000000, pci: {bus_id: "0000:18:00.0"}}
  - uuid: GPU-00000000-0000-4000-8000-000000000001
    name: NVIDIA A100-SXM4-40GB
    architecture: ampere
    compute_capability: "8.0"
    pci: {bus_id: "0000:2a:00.0"}
    mig: {mode: disabled, pending: enabled, profiles: a100-40gb}
  - uuid: GPU-00000000-0000-4000-8000-000000000002
    pci: {bus_id: "0000:3a:00.0"}
    mig: {mode: disabled}
)";

// H100 80GB profile ids (nvidia-smi mig -lgip).
constexpr unsigned k1g10 = 19, k2g20 = 14, k3g40 = 9, k7g80 = 0, k1g20 = 15;

class FakeNvmlDynamicMig : public NvmlTest {
 protected:
  void SetUp() override { ASSERT_EQ(init_with(dir_.file("dyn.yaml", kFleet)), NVML_SUCCESS); }

  nvmlReturn_t create_gi(unsigned gpu, unsigned profile_id, unsigned start, unsigned size, nvmlGpuInstance_t* gi) {
    nvmlGpuInstancePlacement_t p{start, size};
    return sym<nvmlDeviceCreateGpuInstanceWithPlacement_fn>("nvmlDeviceCreateGpuInstanceWithPlacement")(device(gpu),
                                                                                                        profile_id, &p, gi);
  }
  nvmlReturn_t create_ci(nvmlGpuInstance_t gi, unsigned ci_profile, nvmlComputeInstance_t* ci) {
    return sym<nvmlGpuInstanceCreateComputeInstance_fn>("nvmlGpuInstanceCreateComputeInstance")(gi, ci_profile, ci);
  }
  nvmlReturn_t destroy_gi(nvmlGpuInstance_t gi) { return sym<nvmlGpuInstanceDestroy_fn>("nvmlGpuInstanceDestroy")(gi); }
  nvmlReturn_t destroy_ci(nvmlComputeInstance_t ci) {
    return sym<nvmlComputeInstanceDestroy_fn>("nvmlComputeInstanceDestroy")(ci);
  }
  // A GI of `profile_id` at `start` with one CI spanning it; returns the CI.
  nvmlComputeInstance_t make(unsigned profile_id, unsigned start, unsigned size, unsigned ci_profile,
                             nvmlGpuInstance_t* gi_out = nullptr) {
    nvmlGpuInstance_t gi = nullptr;
    EXPECT_EQ(create_gi(0, profile_id, start, size, &gi), NVML_SUCCESS) << profile_id << "@" << start;
    nvmlComputeInstance_t ci = nullptr;
    EXPECT_EQ(create_ci(gi, ci_profile, &ci), NVML_SUCCESS);
    if (gi_out != nullptr) *gi_out = gi;
    return ci;
  }
  std::set<std::string> mig_uuids(unsigned gpu) {
    std::set<std::string> out;
    auto by_index = sym<nvmlDeviceGetMigDeviceHandleByIndex_fn>("nvmlDeviceGetMigDeviceHandleByIndex");
    for (unsigned i = 0; i < 7; ++i) {
      nvmlDevice_t mig = nullptr;
      if (by_index(device(gpu), i, &mig) == NVML_SUCCESS) out.insert(uuid(mig));
    }
    return out;
  }
};

TEST_F(FakeNvmlDynamicMig, ThreeTwoOneOneFillsAnH100AndAFourthIsRefused) {
  make(k3g40, 4, 4, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE);
  make(k2g20, 0, 2, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE);
  make(k1g10, 2, 1, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);
  make(k1g10, 3, 1, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);
  EXPECT_EQ(mig_uuids(0).size(), 4u);
  // Every compute slice is taken: a 1g elsewhere (memory slice 6 is free) cannot be made.
  nvmlGpuInstance_t gi = nullptr;
  EXPECT_EQ(create_gi(0, k1g10, 6, 1, &gi), NVML_ERROR_INSUFFICIENT_RESOURCES);
  unsigned left = 9;
  ASSERT_EQ(sym<nvmlDeviceGetGpuInstanceRemainingCapacity_fn>("nvmlDeviceGetGpuInstanceRemainingCapacity")(device(0), k1g10,
                                                                                                         &left),
            NVML_SUCCESS);
  EXPECT_EQ(left, 0u);
}

TEST_F(FakeNvmlDynamicMig, PlacementRules) {
  nvmlGpuInstance_t gi = nullptr;
  EXPECT_EQ(create_gi(0, k3g40, 1, 4, &gi), NVML_ERROR_INVALID_ARGUMENT);  // 3g starts at 0 or 4 only
  EXPECT_EQ(create_gi(0, k3g40, 0, 2, &gi), NVML_ERROR_INVALID_ARGUMENT);  // wrong size
  EXPECT_EQ(create_gi(0, 99, 0, 1, &gi), NVML_ERROR_INVALID_ARGUMENT);     // no such profile
  ASSERT_EQ(create_gi(0, k3g40, 0, 4, &gi), NVML_SUCCESS);
  nvmlGpuInstance_t other = nullptr;
  // A taken placement is INSUFFICIENT_RESOURCES (not ALREADY_EXISTS), as on the real driver.
  EXPECT_EQ(create_gi(0, k3g40, 0, 4, &other), NVML_ERROR_INSUFFICIENT_RESOURCES);
  EXPECT_EQ(create_gi(0, k1g20, 2, 2, &other), NVML_ERROR_INSUFFICIENT_RESOURCES);  // overlaps slices 2-3
  EXPECT_EQ(create_gi(0, k7g80, 0, 8, &other), NVML_ERROR_INSUFFICIENT_RESOURCES);
  nvmlGpuInstanceInfo_t info{};
  ASSERT_EQ(sym<nvmlGpuInstanceGetInfo_fn>("nvmlGpuInstanceGetInfo")(gi, &info), NVML_SUCCESS);
  EXPECT_EQ(info.profileId, k3g40);
  EXPECT_EQ(info.placement.start, 0u);
  EXPECT_EQ(info.placement.size, 4u);
  EXPECT_EQ(info.id, 1u);  // the id nvidia-smi shows for a 3g at slice 0
}

TEST_F(FakeNvmlDynamicMig, ComputeInstancesFitTheirGpuInstance) {
  nvmlGpuInstance_t gi = nullptr;
  ASSERT_EQ(create_gi(0, k3g40, 4, 4, &gi), NVML_SUCCESS);
  nvmlComputeInstance_t a = nullptr, b = nullptr, c = nullptr;
  ASSERT_EQ(create_ci(gi, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, &a), NVML_SUCCESS);
  EXPECT_EQ(create_ci(gi, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, &b), NVML_ERROR_INSUFFICIENT_RESOURCES);
  ASSERT_EQ(create_ci(gi, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, &c), NVML_SUCCESS);
  EXPECT_EQ(mig_uuids(0).size(), 2u);
  // A GPU instance with compute instances in it is in use.
  EXPECT_EQ(destroy_gi(gi), NVML_ERROR_IN_USE);
  EXPECT_EQ(destroy_ci(a), NVML_SUCCESS);
  EXPECT_EQ(destroy_ci(a), NVML_ERROR_INVALID_ARGUMENT);  // a stale handle
  // The surviving CI's handle still works after its neighbour left.
  nvmlComputeInstanceInfo_t info{};
  ASSERT_EQ(sym<nvmlComputeInstanceGetInfo_fn>("nvmlComputeInstanceGetInfo_v2")(c, &info), NVML_SUCCESS);
  EXPECT_EQ(info.profileId, static_cast<unsigned>(NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE));
  EXPECT_EQ(destroy_ci(c), NVML_SUCCESS);
  EXPECT_EQ(destroy_gi(gi), NVML_SUCCESS);
  EXPECT_TRUE(mig_uuids(0).empty());
}

TEST_F(FakeNvmlDynamicMig, DestroyKeepsOtherHandlesAndRecreateGetsANewUuid) {
  nvmlGpuInstance_t first = nullptr, second = nullptr;
  nvmlComputeInstance_t ci1 = make(k2g20, 0, 2, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, &first);
  nvmlComputeInstance_t ci2 = make(k3g40, 4, 4, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, &second);
  const auto before = mig_uuids(0);
  ASSERT_EQ(destroy_ci(ci1), NVML_SUCCESS);
  ASSERT_EQ(destroy_gi(first), NVML_SUCCESS);
  // The second GI moved to the first position; its handles must still say what it is.
  nvmlGpuInstanceInfo_t info{};
  ASSERT_EQ(sym<nvmlGpuInstanceGetInfo_fn>("nvmlGpuInstanceGetInfo")(second, &info), NVML_SUCCESS);
  EXPECT_EQ(info.profileId, k3g40);
  nvmlComputeInstanceInfo_t ci_info{};
  ASSERT_EQ(sym<nvmlComputeInstanceGetInfo_fn>("nvmlComputeInstanceGetInfo_v2")(ci2, &ci_info), NVML_SUCCESS);
  EXPECT_EQ(ci_info.gpuInstance, second);
  nvmlComputeInstance_t again = make(k2g20, 0, 2, NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE);
  ASSERT_NE(again, nullptr);
  const auto after = mig_uuids(0);
  EXPECT_EQ(after.size(), 2u);
  EXPECT_NE(after, before);  // the recreated 2g has a new uuid
}

TEST_F(FakeNvmlDynamicMig, MigModeOffOrPendingRefusesInstances) {
  nvmlGpuInstance_t gi = nullptr;
  nvmlGpuInstancePlacement_t p{0, 1};
  auto create = sym<nvmlDeviceCreateGpuInstanceWithPlacement_fn>("nvmlDeviceCreateGpuInstanceWithPlacement");
  EXPECT_EQ(create(device(1), 19, &p, &gi), NVML_ERROR_INVALID_STATE);  // A100: enable pending a reset
  EXPECT_EQ(create(device(2), 19, &p, &gi), NVML_ERROR_INVALID_STATE);  // H100: MIG off
  auto set_mode = sym<nvmlDeviceSetMigMode_fn>("nvmlDeviceSetMigMode");
  nvmlReturn_t activation = NVML_ERROR_UNKNOWN;
  // Hopper switches without a reset.
  ASSERT_EQ(set_mode(device(2), NVML_DEVICE_MIG_ENABLE, &activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_SUCCESS);
  EXPECT_EQ(create(device(2), 19, &p, &gi), NVML_SUCCESS);
  // Never disabled under an instance.
  EXPECT_EQ(set_mode(device(2), NVML_DEVICE_MIG_DISABLE, &activation), NVML_ERROR_IN_USE);
  // Ampere keeps a mode change pending until a reset.
  ASSERT_EQ(set_mode(device(1), NVML_DEVICE_MIG_ENABLE, &activation), NVML_SUCCESS);
  EXPECT_EQ(activation, NVML_ERROR_RESET_REQUIRED);
  unsigned cur = 9, pending = 9;
  ASSERT_EQ(sym<nvmlDeviceGetMigMode_fn>("nvmlDeviceGetMigMode")(device(1), &cur, &pending), NVML_SUCCESS);
  EXPECT_EQ(cur, static_cast<unsigned>(NVML_DEVICE_MIG_DISABLE));
  EXPECT_EQ(pending, static_cast<unsigned>(NVML_DEVICE_MIG_ENABLE));
}

TEST_F(FakeNvmlDynamicMig, EveryH100PlacementCanBeMadeAlone) {
  // Each possible placement the table reports can be created on an empty GPU, and destroyed again.
  auto info_fn = sym<nvmlDeviceGetGpuInstanceProfileInfo_fn>("nvmlDeviceGetGpuInstanceProfileInfo");
  auto placements_fn =
      sym<nvmlDeviceGetGpuInstancePossiblePlacements_fn>("nvmlDeviceGetGpuInstancePossiblePlacements_v2");
  unsigned made = 0;
  for (unsigned idx = 0; idx < NVML_GPU_INSTANCE_PROFILE_COUNT; ++idx) {
    nvmlGpuInstanceProfileInfo_t info{};
    if (info_fn(device(0), idx, &info) != NVML_SUCCESS) continue;
    nvmlGpuInstancePlacement_t ps[8];
    unsigned n = 8;
    ASSERT_EQ(placements_fn(device(0), info.id, ps, &n), NVML_SUCCESS);
    for (unsigned i = 0; i < n; ++i) {
      nvmlGpuInstance_t gi = nullptr;
      ASSERT_EQ(create_gi(0, info.id, ps[i].start, ps[i].size, &gi), NVML_SUCCESS) << info.id << "@" << ps[i].start;
      ASSERT_EQ(destroy_gi(gi), NVML_SUCCESS);
      ++made;
    }
  }
  // 7 x 1g.10gb, 7 x 1g.10gb+me, 4 x 1g.20gb, 3 x 2g.20gb, 2 x 3g.40gb, 4g.40gb, 7g.80gb.
  EXPECT_EQ(made, 25u);
}

TEST_F(FakeNvmlDynamicMig, InjectedFailureReachesCreate) {
  auto fleet = dir_.file("fail.yaml", std::string(kFleet) + "    fail: {calls: {nvmlDeviceCreateGpuInstanceWithPlacement: NVML_ERROR_UNKNOWN}}\n");
  TearDown();
  ASSERT_EQ(init_with(fleet), NVML_SUCCESS);
  nvmlGpuInstancePlacement_t p{0, 1};
  nvmlGpuInstance_t gi = nullptr;
  auto create = sym<nvmlDeviceCreateGpuInstanceWithPlacement_fn>("nvmlDeviceCreateGpuInstanceWithPlacement");
  EXPECT_EQ(create(device(2), 19, &p, &gi), NVML_ERROR_UNKNOWN);
}

// KGPU_FAKE_NVML_MIG_STATE: instances outlive the process that made them, as on a driver, so a
// restarted kgpu finds what a killed one left; a new process's instances get uuids of their own.
TEST_F(FakeNvmlDynamicMig, TheMigStateFileKeepsInstancesAcrossInits) {
  const std::string state = dir_.path() + "/mig-state";
  setenv("KGPU_FAKE_NVML_MIG_STATE", state.c_str(), 1);
  make(k3g40, 4, 4, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE);
  nvmlGpuInstance_t half = nullptr;
  ASSERT_EQ(create_gi(0, k1g10, 0, 1, &half), NVML_SUCCESS);  // a GI without a CI is kept too
  const auto before = mig_uuids(0);
  ASSERT_EQ(before.size(), 1u);
  TearDown();
  ASSERT_EQ(init_with(dir_.file("dyn.yaml", kFleet)), NVML_SUCCESS);
  EXPECT_EQ(mig_uuids(0), before);
  nvmlGpuInstance_t gi = nullptr;
  EXPECT_EQ(create_gi(0, k1g10, 0, 1, &gi), NVML_ERROR_INSUFFICIENT_RESOURCES) << "slice 0 still taken";
  nvmlGpuInstance_t kept = nullptr;
  ASSERT_EQ(sym<nvmlDeviceGetGpuInstanceById_fn>("nvmlDeviceGetGpuInstanceById")(device(0), 2, &kept), NVML_SUCCESS);
  make(k1g10, 1, 1, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE);
  EXPECT_EQ(mig_uuids(0).size(), 2u) << "a new instance's uuid is not an earlier one's";
  unsetenv("KGPU_FAKE_NVML_MIG_STATE");
}

// KGPU_FAKE_NVML_ROOT: an instance's capability node and access file exist while it does.
TEST_F(FakeNvmlDynamicMig, CapabilityFilesFollowTheInstances) {
  setenv("KGPU_FAKE_NVML_ROOT", dir_.path().c_str(), 1);
  nvmlGpuInstance_t gi = nullptr;
  nvmlComputeInstance_t ci = make(k3g40, 4, 4, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, &gi);
  nvmlGpuInstanceInfo_t info{};
  ASSERT_EQ(sym<nvmlGpuInstanceGetInfo_fn>("nvmlGpuInstanceGetInfo")(gi, &info), NVML_SUCCESS);
  const std::string gi_node = dir_.path() + "/dev/nvidia-caps/nvidia-cap" + std::to_string(mig_gi_minor(0, info.id));
  const std::string ci_node = dir_.path() + "/dev/nvidia-caps/nvidia-cap" + std::to_string(mig_ci_minor(0, info.id, 0));
  const std::string access =
      dir_.path() + "/proc/driver/nvidia/capabilities/gpu0/mig/gi" + std::to_string(info.id) + "/ci0/access";
  EXPECT_TRUE(std::filesystem::exists(gi_node));
  EXPECT_TRUE(std::filesystem::exists(ci_node));
  EXPECT_TRUE(std::filesystem::exists(access));
  ASSERT_EQ(destroy_ci(ci), NVML_SUCCESS);
  EXPECT_FALSE(std::filesystem::exists(ci_node));
  EXPECT_FALSE(std::filesystem::exists(access));
  EXPECT_TRUE(std::filesystem::exists(gi_node));
  ASSERT_EQ(destroy_gi(gi), NVML_SUCCESS);
  EXPECT_FALSE(std::filesystem::exists(gi_node));
  unsetenv("KGPU_FAKE_NVML_ROOT");
}

}  // namespace
}  // namespace kgpu::fake_nvml::testing

namespace kgpu::fake_nvml::testing {
namespace {

// The H200 and A100-40GB tables against NVIDIA's (MIG user guide; nvidia-smi mig -lgip).
TEST_F(NvmlTest, PublishedH200AndA100Tables) {
  auto fleet = dir_.file("h200.yaml", R"(node: {driver_version: "580.65.06", cuda_driver_version: 13000}
defaults: {name: NVIDIA H200, architecture: hopper, compute_capability: "9.0", memory: {total_mib: 143771}, pci: {device_id: 0x2335}}
gpus:
  - {uuid: GPU-00000000-0000-4000-8000-000000000000, pci: {bus_id: "0000:18:00.0"}, mig: {capable: true, mode: enabled, profiles: h200}}
  - {uuid: GPU-00000000-0000-4000-8000-000000000001, pci: {bus_id: "0000:19:00.0"}, mig: {capable: true, mode: enabled, profiles: a100-40gb}}
)");
  ASSERT_EQ(init_with(fleet), NVML_SUCCESS);
  auto info_fn = sym<nvmlDeviceGetGpuInstanceProfileInfo_fn>("nvmlDeviceGetGpuInstanceProfileInfo");
  struct Row {
    unsigned index, id, slices, instances, sms;
    unsigned long long mib;
  };
  const Row h200[] = {{NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, 1, 7, 16, 16384},
                      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, 1, 1, 16, 16384},
                      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, 15, 1, 4, 26, 33280},
                      {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, 2, 3, 32, 33280},
                      {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, 3, 2, 60, 66560},
                      {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, 4, 1, 64, 66560},
                      {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, 7, 1, 132, 143360}};
  for (const Row& r : h200) {
    nvmlGpuInstanceProfileInfo_t info{};
    ASSERT_EQ(info_fn(device(0), r.index, &info), NVML_SUCCESS) << r.index;
    EXPECT_EQ(info.id, r.id);
    EXPECT_EQ(info.sliceCount, r.slices);
    EXPECT_EQ(info.instanceCount, r.instances);
    EXPECT_EQ(info.multiprocessorCount, r.sms);
    EXPECT_EQ(info.memorySizeMB, r.mib);
  }
  // A100-SXM4-40GB: 1g.10gb (id 15) has 4 instances of two memory slices each.
  nvmlGpuInstanceProfileInfo_t info{};
  ASSERT_EQ(info_fn(device(1), NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2, &info), NVML_SUCCESS);
  EXPECT_EQ(info.id, 15u);
  EXPECT_EQ(info.instanceCount, 4u);
  EXPECT_EQ(info.memorySizeMB, 9984u);
}

}  // namespace
}  // namespace kgpu::fake_nvml::testing
