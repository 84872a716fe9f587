// Dynamic MIG entry points: MIG mode switching, GPU instances created at a placement, compute
// instances inside them, and their destruction (the rules live in simulator_mig.cpp).
#include <algorithm>
#include <type_traits>

#include "api_helpers.h"
#include "mig_profiles.h"
#include "mig_state.h"
#include "nvml/nvml_abi_dynamic_mig.h"

namespace kgpu::fake_nvml {
namespace {

// The profile a create names by its id (as nvmlDeviceGetGpuInstanceProfileInfo reports it).
const GiProfile* profile_by_id(const Gpu& gpu, unsigned id) {
  const auto& profiles = gpu.mig.table->profiles;
  auto it = std::find_if(profiles.begin(), profiles.end(), [&](const GiProfile& p) { return p.id == id; });
  return it == profiles.end() ? nullptr : &*it;
}

// Instance calls need a MIG-capable full GPU whose MIG mode is on and not about to change.
nvmlReturn_t require_mig_on(const Gpu& gpu, const nvmlDevice_st& d) {
  if (d.is_mig()) return NVML_ERROR_INVALID_ARGUMENT;
  if (!gpu.mig.capable) return NVML_ERROR_NOT_SUPPORTED;
  if (gpu.mig.mode != NVML_DEVICE_MIG_ENABLE || gpu.mig.pending != NVML_DEVICE_MIG_ENABLE)
    return NVML_ERROR_INVALID_STATE;
  return NVML_SUCCESS;
}

}  // namespace
}  // namespace kgpu::fake_nvml

using namespace kgpu::fake_nvml;

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceSetMigMode(nvmlDevice_t device, unsigned int mode, nvmlReturn_t* activationStatus) {
  return device_call(device, "nvmlDeviceSetMigMode", [&](Simulator& sim, nvmlDevice_st& d) {
    if (activationStatus == nullptr || d.is_mig()) return NVML_ERROR_INVALID_ARGUMENT;
    return sim.set_mig_mode(d.gpu, mode, activationStatus);
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceRemainingCapacity(nvmlDevice_t device, unsigned int profileId,
                                                                        unsigned int* count) {
  return device_call(device, "nvmlDeviceGetGpuInstanceRemainingCapacity", [&](Simulator& sim, nvmlDevice_st& d) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = require_mig_on(sim.gpu(d), d); rc != NVML_SUCCESS) return rc;
    const GiProfile* p = profile_by_id(sim.gpu(d), profileId);
    if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *count = sim.remaining_capacity(d.gpu, *p);
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstanceWithPlacement(nvmlDevice_t device, unsigned int profileId,
                                                                       const nvmlGpuInstancePlacement_t* placement,
                                                                       nvmlGpuInstance_t* gpuInstance) {
  return device_call(device, "nvmlDeviceCreateGpuInstanceWithPlacement", [&](Simulator& sim, nvmlDevice_st& d) {
    if (placement == nullptr || gpuInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = require_mig_on(sim.gpu(d), d); rc != NVML_SUCCESS) return rc;
    const GiProfile* p = profile_by_id(sim.gpu(d), profileId);
    if (p == nullptr || placement->size != p->memory_slices) return NVML_ERROR_INVALID_ARGUMENT;
    const GiProfile profile = *p;  // the table entry may move when the instance list grows
    return sim.create_gpu_instance(d.gpu, profile, placement->start, gpuInstance);
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceCreateGpuInstance(nvmlDevice_t device, unsigned int profileId,
                                                          nvmlGpuInstance_t* gpuInstance) {
  return device_call(device, "nvmlDeviceCreateGpuInstance", [&](Simulator& sim, nvmlDevice_st& d) {
    if (gpuInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = require_mig_on(sim.gpu(d), d); rc != NVML_SUCCESS) return rc;
    const GiProfile* p = profile_by_id(sim.gpu(d), profileId);
    if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const GiProfile profile = *p;
    // Without a placement the driver takes the first one that fits.
    for (unsigned start : profile.placements)
      if (sim.create_gpu_instance(d.gpu, profile, start, gpuInstance) == NVML_SUCCESS) return NVML_SUCCESS;
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceCreateComputeInstance(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                                   nvmlComputeInstance_t* computeInstance) {
  std::lock_guard lock(api_mutex());
  Simulator* sim = live_simulator();
  if (sim == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (!sim->valid(gpuInstance) || computeInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvmlReturn_t rc = sim->gate(*gpuInstance->device, "nvmlGpuInstanceCreateComputeInstance"); rc != NVML_SUCCESS)
    return rc;
  auto slices = compute_profile_slices(profileId);
  if (!slices || profileId == NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1) return NVML_ERROR_NOT_SUPPORTED;
  wait_at_ci_create_gate();  // KGPU_FAKE_NVML_BLOCK_CI_CREATE: a test kills the caller here
  return sim->create_compute_instance(gpuInstance, *slices, computeInstance);
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlComputeInstanceDestroy(nvmlComputeInstance_t computeInstance) {
  std::lock_guard lock(api_mutex());
  Simulator* sim = live_simulator();
  if (sim == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (!sim->valid(computeInstance)) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvmlReturn_t rc = sim->gate(*computeInstance->gpu_instance->device, "nvmlComputeInstanceDestroy"); rc != NVML_SUCCESS)
    return rc;
  return sim->destroy_compute_instance(computeInstance);
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceDestroy(nvmlGpuInstance_t gpuInstance) {
  std::lock_guard lock(api_mutex());
  Simulator* sim = live_simulator();
  if (sim == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (!sim->valid(gpuInstance)) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvmlReturn_t rc = sim->gate(*gpuInstance->device, "nvmlGpuInstanceDestroy"); rc != NVML_SUCCESS) return rc;
  return sim->destroy_gpu_instance(gpuInstance);
}

static_assert(std::is_same_v<decltype(&nvmlDeviceSetMigMode), nvmlDeviceSetMigMode_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetGpuInstanceRemainingCapacity), nvmlDeviceGetGpuInstanceRemainingCapacity_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceCreateGpuInstanceWithPlacement), nvmlDeviceCreateGpuInstanceWithPlacement_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceCreateGpuInstance), nvmlDeviceCreateGpuInstance_fn>);
static_assert(std::is_same_v<decltype(&nvmlGpuInstanceCreateComputeInstance), nvmlGpuInstanceCreateComputeInstance_fn>);
static_assert(std::is_same_v<decltype(&nvmlComputeInstanceDestroy), nvmlComputeInstanceDestroy_fn>);
static_assert(std::is_same_v<decltype(&nvmlGpuInstanceDestroy), nvmlGpuInstanceDestroy_fn>);
