// MIG: device handles, instance ids, profile tables, checked against the a100-mig-* fleets and the
// published A100-SXM4-40GB MIG profile table.
#include <gmock/gmock.h>

#include <map>
#include <set>

#include "nvml_under_test.h"

namespace kgpu::fake_nvml::testing {
namespace {

using ::testing::StartsWith;

class FakeNvmlMig : public NvmlTest {
 protected:
  void SetUp() override { ASSERT_EQ(init_with(fleet_path("a100-mig-mixed")), NVML_SUCCESS); }

  std::vector<nvmlDevice_t> mig_devices(nvmlDevice_t gpu) {
    std::vector<nvmlDevice_t> out;
    unsigned max = 0;
    EXPECT_EQ(sym<nvmlDeviceGetMaxMigDeviceCount_fn>("nvmlDeviceGetMaxMigDeviceCount")(gpu, &max), NVML_SUCCESS);
    for (unsigned i = 0; i < max; ++i) {
      nvmlDevice_t mig = nullptr;
      nvmlReturn_t rc = sym<nvmlDeviceGetMigDeviceHandleByIndex_fn>("nvmlDeviceGetMigDeviceHandleByIndex")(gpu, i, &mig);
      if (rc == NVML_ERROR_NOT_FOUND) continue;
      EXPECT_EQ(rc, NVML_SUCCESS);
      out.push_back(mig);
    }
    return out;
  }

  std::string mig_profile(nvmlDevice_t mig) {
    std::string n = name(mig);
    return n.substr(n.rfind(' ') + 1);
  }
};

TEST_F(FakeNvmlMig, ModesAndDeviceCounts) {
  auto mode = sym<nvmlDeviceGetMigMode_fn>("nvmlDeviceGetMigMode");
  const unsigned expected_enabled[] = {1, 1, 1, 0};
  const size_t expected_devices[] = {3, 7, 4};
  for (unsigned g = 0; g < 4; ++g) {
    unsigned cur = 9, pending = 9;
    ASSERT_EQ(mode(device(g), &cur, &pending), NVML_SUCCESS);
    EXPECT_EQ(cur, expected_enabled[g]) << g;
    EXPECT_EQ(pending, cur);
    unsigned max = 0;
    ASSERT_EQ(sym<nvmlDeviceGetMaxMigDeviceCount_fn>("nvmlDeviceGetMaxMigDeviceCount")(device(g), &max), NVML_SUCCESS);
    EXPECT_EQ(max, 7u);
    if (g < 3) {
      EXPECT_EQ(mig_devices(device(g)).size(), expected_devices[g]) << g;
    }
  }
  nvmlDevice_t mig = nullptr;
  auto by_index = sym<nvmlDeviceGetMigDeviceHandleByIndex_fn>("nvmlDeviceGetMigDeviceHandleByIndex");
  EXPECT_EQ(by_index(device(0), 3, &mig), NVML_ERROR_NOT_FOUND);
  EXPECT_EQ(by_index(device(0), 7, &mig), NVML_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(by_index(device(3), 0, &mig), NVML_SUCCESS);  // MIG disabled on GPU 3
}

TEST_F(FakeNvmlMig, MixedLayoutNamesMemoryAndAttributes) {
  // GPU 0 is 3g.20gb + 2g.10gb + 1g.5gb; sizes and SMs are those of the real A100-SXM4-40GB table.
  struct Expect {
    unsigned long long memory_mib;
    unsigned sms, gi_slices;
  };
  const std::map<std::string, Expect> table = {{"3g.20gb", {20096, 42, 3}}, {"2g.10gb", {9984, 28, 2}}, {"1g.5gb", {4864, 14, 1}}};
  std::set<std::string> seen;
  for (nvmlDevice_t mig : mig_devices(device(0))) {
    EXPECT_THAT(name(mig), StartsWith("NVIDIA A100-SXM4-40GB MIG "));
    const std::string profile = mig_profile(mig);
    ASSERT_EQ(table.count(profile), 1u) << profile;
    seen.insert(profile);
    EXPECT_THAT(uuid(mig), StartsWith("MIG-"));
    nvmlMemory_t mem{};
    ASSERT_EQ(sym<nvmlDeviceGetMemoryInfo_fn>("nvmlDeviceGetMemoryInfo")(mig, &mem), NVML_SUCCESS);
    EXPECT_EQ(mem.total, table.at(profile).memory_mib * 1024 * 1024);
    nvmlDeviceAttributes_t a{};
    ASSERT_EQ(sym<nvmlDeviceGetAttributes_fn>("nvmlDeviceGetAttributes_v2")(mig, &a), NVML_SUCCESS);
    EXPECT_EQ(a.multiprocessorCount, table.at(profile).sms);
    EXPECT_EQ(a.gpuInstanceSliceCount, table.at(profile).gi_slices);
    EXPECT_EQ(a.computeInstanceSliceCount, table.at(profile).gi_slices);
    EXPECT_EQ(a.memorySizeMB, table.at(profile).memory_mib);
    // Identity that belongs to the board comes from the parent.
    nvmlPciInfo_t mig_pci{}, parent_pci{};
    ASSERT_EQ(sym<nvmlDeviceGetPciInfo_fn>("nvmlDeviceGetPciInfo_v3")(mig, &mig_pci), NVML_SUCCESS);
    ASSERT_EQ(sym<nvmlDeviceGetPciInfo_fn>("nvmlDeviceGetPciInfo_v3")(device(0), &parent_pci), NVML_SUCCESS);
    EXPECT_STREQ(mig_pci.busId, parent_pci.busId);
  }
  EXPECT_EQ(seen.size(), 3u);
}

TEST_F(FakeNvmlMig, MigHandlesLeadBackToTheirParentAndInstances) {
  auto is_mig = sym<nvmlDeviceIsMigDeviceHandle_fn>("nvmlDeviceIsMigDeviceHandle");
  auto parent_of = sym<nvmlDeviceGetDeviceHandleFromMigDeviceHandle_fn>("nvmlDeviceGetDeviceHandleFromMigDeviceHandle");
  auto gi_id = sym<nvmlDeviceGetGpuInstanceId_fn>("nvmlDeviceGetGpuInstanceId");
  auto ci_id = sym<nvmlDeviceGetComputeInstanceId_fn>("nvmlDeviceGetComputeInstanceId");
  auto gi_by_id = sym<nvmlDeviceGetGpuInstanceById_fn>("nvmlDeviceGetGpuInstanceById");
  auto gi_info = sym<nvmlGpuInstanceGetInfo_fn>("nvmlGpuInstanceGetInfo");
  auto ci_by_id = sym<nvmlGpuInstanceGetComputeInstanceById_fn>("nvmlGpuInstanceGetComputeInstanceById");
  auto ci_info = sym<nvmlComputeInstanceGetInfo_fn>("nvmlComputeInstanceGetInfo_v2");
  auto by_uuid = sym<nvmlDeviceGetHandleByUUID_fn>("nvmlDeviceGetHandleByUUID");

  unsigned flag = 7;
  ASSERT_EQ(is_mig(device(2), &flag), NVML_SUCCESS);
  EXPECT_EQ(flag, 0u);
  std::set<unsigned> gi_ids;
  for (nvmlDevice_t mig : mig_devices(device(2))) {
    ASSERT_EQ(is_mig(mig, &flag), NVML_SUCCESS);
    EXPECT_EQ(flag, 1u);
    nvmlDevice_t parent = nullptr;
    ASSERT_EQ(parent_of(mig, &parent), NVML_SUCCESS);
    EXPECT_EQ(parent, device(2));
    nvmlDevice_t again = nullptr;
    ASSERT_EQ(by_uuid(uuid(mig).c_str(), &again), NVML_SUCCESS);
    EXPECT_EQ(again, mig);

    unsigned gi = 99, ci = 99;
    ASSERT_EQ(gi_id(mig, &gi), NVML_SUCCESS);
    ASSERT_EQ(ci_id(mig, &ci), NVML_SUCCESS);
    EXPECT_TRUE(gi_ids.insert(gi).second) << "GI ids are unique on a GPU";
    nvmlGpuInstance_t gpu_instance = nullptr;
    ASSERT_EQ(gi_by_id(device(2), gi, &gpu_instance), NVML_SUCCESS);
    nvmlGpuInstanceInfo_t info{};
    ASSERT_EQ(gi_info(gpu_instance, &info), NVML_SUCCESS);
    EXPECT_EQ(info.id, gi);
    EXPECT_EQ(info.device, device(2));
    const bool two_slice = mig_profile(mig) == "2g.10gb";
    EXPECT_EQ(info.profileId, two_slice ? 14u : 19u);  // A100 profile ids: 2g.10gb = 14, 1g.5gb = 19
    EXPECT_EQ(info.placement.size, two_slice ? 2u : 1u);
    nvmlComputeInstance_t compute = nullptr;
    ASSERT_EQ(ci_by_id(gpu_instance, ci, &compute), NVML_SUCCESS);
    nvmlComputeInstanceInfo_t cinfo{};
    ASSERT_EQ(ci_info(compute, &cinfo), NVML_SUCCESS);
    EXPECT_EQ(cinfo.id, ci);
    EXPECT_EQ(cinfo.gpuInstance, gpu_instance);
    EXPECT_EQ(cinfo.device, device(2));
    EXPECT_EQ(cinfo.placement.size, two_slice ? 2u : 1u);
    EXPECT_EQ(ci_by_id(gpu_instance, ci + 1, &compute), NVML_ERROR_NOT_FOUND);
  }
  EXPECT_EQ(gi_ids.size(), 4u);
  unsigned gi = 0;
  EXPECT_EQ(gi_id(device(2), &gi), NVML_ERROR_INVALID_ARGUMENT);  // not a MIG handle
  nvmlGpuInstance_t none = nullptr;
  EXPECT_EQ(gi_by_id(device(2), 14, &none), NVML_ERROR_NOT_FOUND);
}

TEST_F(FakeNvmlMig, GpuInstanceProfileTableIsTheA100s) {
  auto info = sym<nvmlDeviceGetGpuInstanceProfileInfo_fn>("nvmlDeviceGetGpuInstanceProfileInfo");
  struct Row {
    unsigned profile, id, slices, instances, sms;
    unsigned long long memory_mib;
  };
  // NVIDIA's MIG user guide, A100-SXM4-40GB (nvidia-smi mig -lgip).
  const Row rows[] = {{NVML_GPU_INSTANCE_PROFILE_1_SLICE, 19, 1, 7, 14, 4864},
                      {NVML_GPU_INSTANCE_PROFILE_2_SLICE, 14, 2, 3, 28, 9984},
                      {NVML_GPU_INSTANCE_PROFILE_3_SLICE, 9, 3, 2, 42, 20096},
                      {NVML_GPU_INSTANCE_PROFILE_4_SLICE, 5, 4, 1, 56, 20096},
                      {NVML_GPU_INSTANCE_PROFILE_7_SLICE, 0, 7, 1, 98, 40448},
                      {NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1, 20, 1, 1, 14, 4864}};
  for (const Row& r : rows) {
    nvmlGpuInstanceProfileInfo_t p{};
    ASSERT_EQ(info(device(3), r.profile, &p), NVML_SUCCESS) << r.profile;  // works with MIG disabled too
    EXPECT_EQ(p.id, r.id);
    EXPECT_EQ(p.sliceCount, r.slices);
    EXPECT_EQ(p.instanceCount, r.instances);
    EXPECT_EQ(p.multiprocessorCount, r.sms);
    EXPECT_EQ(p.memorySizeMB, r.memory_mib);
  }
  nvmlGpuInstanceProfileInfo_t p{};
  EXPECT_EQ(info(device(0), NVML_GPU_INSTANCE_PROFILE_8_SLICE, &p), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(info(device(0), NVML_GPU_INSTANCE_PROFILE_COUNT, &p), NVML_ERROR_INVALID_ARGUMENT);

  unsigned count = 0;
  auto placements = sym<nvmlDeviceGetGpuInstancePossiblePlacements_fn>("nvmlDeviceGetGpuInstancePossiblePlacements_v2");
  ASSERT_EQ(placements(device(0), 9, nullptr, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 2u);
  nvmlGpuInstance_t gis[7] = {};
  ASSERT_EQ(sym<nvmlDeviceGetGpuInstances_fn>("nvmlDeviceGetGpuInstances")(device(1), 19, gis, &count), NVML_SUCCESS);
  EXPECT_EQ(count, 7u);
}

TEST_F(FakeNvmlMig, ComputeInstanceProfilesFitTheirGpuInstance) {
  nvmlDevice_t three_g = nullptr;
  for (nvmlDevice_t mig : mig_devices(device(0)))
    if (mig_profile(mig) == "3g.20gb") three_g = mig;
  ASSERT_NE(three_g, nullptr);
  unsigned gi = 0;
  ASSERT_EQ(sym<nvmlDeviceGetGpuInstanceId_fn>("nvmlDeviceGetGpuInstanceId")(three_g, &gi), NVML_SUCCESS);
  nvmlGpuInstance_t instance = nullptr;
  ASSERT_EQ(sym<nvmlDeviceGetGpuInstanceById_fn>("nvmlDeviceGetGpuInstanceById")(device(0), gi, &instance), NVML_SUCCESS);
  auto ci_profile = sym<nvmlGpuInstanceGetComputeInstanceProfileInfo_fn>("nvmlGpuInstanceGetComputeInstanceProfileInfo");
  nvmlComputeInstanceProfileInfo_t p{};
  ASSERT_EQ(ci_profile(instance, NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &p),
            NVML_SUCCESS);
  EXPECT_EQ(p.sliceCount, 1u);
  EXPECT_EQ(p.instanceCount, 3u);
  EXPECT_EQ(p.multiprocessorCount, 14u);
  ASSERT_EQ(ci_profile(instance, NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &p),
            NVML_SUCCESS);
  EXPECT_EQ(p.instanceCount, 1u);
  EXPECT_EQ(p.multiprocessorCount, 42u);
  EXPECT_EQ(ci_profile(instance, NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, 0, &p), NVML_ERROR_NOT_SUPPORTED);
  EXPECT_EQ(ci_profile(instance, NVML_COMPUTE_INSTANCE_PROFILE_COUNT, 0, &p), NVML_ERROR_INVALID_ARGUMENT);
}

TEST_F(FakeNvmlMig, MigSingleFleetIsUniform) {
  ASSERT_EQ(sym<nvmlShutdown_fn>("nvmlShutdown")(), NVML_SUCCESS);
  --initialised_;
  ASSERT_EQ(init_with(fleet_path("a100-mig-single")), NVML_SUCCESS);
  std::set<std::string> uuids;
  for (unsigned g = 0; g < 2; ++g)
    for (nvmlDevice_t mig : mig_devices(device(g))) {
      EXPECT_EQ(mig_profile(mig), "1g.5gb");
      uuids.insert(uuid(mig));
    }
  EXPECT_EQ(uuids.size(), 14u);
}

}  // namespace
}  // namespace kgpu::fake_nvml::testing
