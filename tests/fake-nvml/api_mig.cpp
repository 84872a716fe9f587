// MIG: mode, MIG device handles, GPU/compute instances and their profile tables.
#include <algorithm>
#include <type_traits>

#include "api_helpers.h"
#include "mig_profiles.h"

namespace kgpu::fake_nvml {
namespace {

// The GI/CI handle calls pass the same gate as a call on their parent GPU.
template <typename Body>
nvmlReturn_t gi_call(nvmlGpuInstance_t gi, const char* call, Body&& body) {
  std::lock_guard lock(api_mutex());
  Simulator* sim = live_simulator();
  if (sim == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (!sim->valid(gi)) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvmlReturn_t rc = sim->gate(*gi->device, call); rc != NVML_SUCCESS) return rc;
  return body(*sim, sim->gpu(*gi->device).mig.instances[gi->gi]);
}

template <typename Body>
nvmlReturn_t ci_call(nvmlComputeInstance_t ci, const char* call, Body&& body) {
  std::lock_guard lock(api_mutex());
  Simulator* sim = live_simulator();
  if (sim == nullptr) return NVML_ERROR_UNINITIALIZED;
  if (!sim->valid(ci)) return NVML_ERROR_INVALID_ARGUMENT;
  if (nvmlReturn_t rc = sim->gate(*ci->mig_device, call); rc != NVML_SUCCESS) return rc;
  return body(*sim);
}

// MIG calls on a full GPU need MIG capability and, for instance calls, MIG mode on.
nvmlReturn_t require_mig(const Simulator& sim, const nvmlDevice_st& d, bool enabled) {
  if (d.is_mig()) return NVML_ERROR_INVALID_ARGUMENT;
  const Mig& mig = sim.gpu(d).mig;
  if (!mig.capable) return NVML_ERROR_NOT_SUPPORTED;
  if (enabled && mig.mode != NVML_DEVICE_MIG_ENABLE) return NVML_ERROR_INVALID_STATE;
  return NVML_SUCCESS;
}

const GiProfile* profile_by_id(const Mig& mig, unsigned id) {
  auto it = std::find_if(mig.table->profiles.begin(), mig.table->profiles.end(), [&](const GiProfile& p) { return p.id == id; });
  return it == mig.table->profiles.end() ? nullptr : &*it;
}

unsigned ci_sm_count(const Mig& mig, const GpuInstance& gi, unsigned slices) {
  return slices == gi.profile.compute_slices ? gi.profile.sm_count : slices * mig.table->sms_per_slice;
}

// nvmlComputeInstanceInfo_t before placement was added (the unversioned entry point).
struct ComputeInstanceInfoV1 {
  nvmlDevice_t device;
  nvmlGpuInstance_t gpuInstance;
  unsigned int id;
  unsigned int profileId;
};

nvmlComputeInstanceInfo_t ci_info(Simulator& sim, nvmlComputeInstance_t ci) {
  const nvmlDevice_st& mig = *ci->mig_device;
  const ComputeInstance& c = sim.compute_instance(mig);
  nvmlComputeInstanceInfo_t info{};
  info.device = mig.parent;
  info.gpuInstance = ci->gpu_instance;
  info.id = c.id;
  info.profileId = compute_profile_index(c.slices).value_or(0);
  info.placement = {c.placement, c.slices};
  return info;
}

}  // namespace
}  // namespace kgpu::fake_nvml

using namespace kgpu::fake_nvml;

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigMode(nvmlDevice_t device, unsigned int* currentMode, unsigned int* pendingMode) {
  return device_call(device, "nvmlDeviceGetMigMode", [&](Simulator& sim, nvmlDevice_st& d) {
    if (currentMode == nullptr || pendingMode == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (d.is_mig() || !sim.gpu(d).mig.capable) return NVML_ERROR_NOT_SUPPORTED;
    *currentMode = sim.gpu(d).mig.mode;
    *pendingMode = sim.gpu(d).mig.pending;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMaxMigDeviceCount(nvmlDevice_t device, unsigned int* count) {
  return device_call(device, "nvmlDeviceGetMaxMigDeviceCount", [&](Simulator& sim, nvmlDevice_st& d) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = require_mig(sim, d, false); rc != NVML_SUCCESS) return rc;
    *count = sim.gpu(d).mig.table->max_mig_devices;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMigDeviceHandleByIndex(nvmlDevice_t device, unsigned int index, nvmlDevice_t* migDevice) {
  return device_call(device, "nvmlDeviceGetMigDeviceHandleByIndex", [&](Simulator& sim, nvmlDevice_st& d) {
    if (migDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = require_mig(sim, d, true); rc != NVML_SUCCESS) return rc;
    if (index >= sim.gpu(d).mig.table->max_mig_devices) return NVML_ERROR_INVALID_ARGUMENT;
    const auto& handles = sim.mig_handles(d.gpu);
    if (index >= handles.size()) return NVML_ERROR_NOT_FOUND;
    *migDevice = handles[index];
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceIsMigDeviceHandle(nvmlDevice_t device, unsigned int* isMigDevice) {
  return device_call(device, "nvmlDeviceIsMigDeviceHandle", [&](Simulator&, nvmlDevice_st& d) {
    if (isMigDevice == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *isMigDevice = d.is_mig() ? 1u : 0u;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDeviceHandleFromMigDeviceHandle(nvmlDevice_t migDevice, nvmlDevice_t* device) {
  return device_call(migDevice, "nvmlDeviceGetDeviceHandleFromMigDeviceHandle", [&](Simulator&, nvmlDevice_st& d) {
    if (device == nullptr || !d.is_mig()) return NVML_ERROR_INVALID_ARGUMENT;
    *device = d.parent;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceId(nvmlDevice_t device, unsigned int* id) {
  return device_call(device, "nvmlDeviceGetGpuInstanceId", [&](Simulator& sim, nvmlDevice_st& d) {
    if (id == nullptr || !d.is_mig()) return NVML_ERROR_INVALID_ARGUMENT;
    *id = sim.gpu_instance(d).id;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetComputeInstanceId(nvmlDevice_t device, unsigned int* id) {
  return device_call(device, "nvmlDeviceGetComputeInstanceId", [&](Simulator& sim, nvmlDevice_st& d) {
    if (id == nullptr || !d.is_mig()) return NVML_ERROR_INVALID_ARGUMENT;
    *id = sim.compute_instance(d).id;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetAttributes_v2(nvmlDevice_t device, nvmlDeviceAttributes_t* attributes) {
  return device_call(device, "nvmlDeviceGetAttributes_v2", [&](Simulator& sim, nvmlDevice_st& d) {
    if (attributes == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlDeviceAttributes_t a{};
    const Gpu& gpu = sim.gpu(d);
    if (d.is_mig()) {
      const GpuInstance& gi = sim.gpu_instance(d);
      const ComputeInstance& ci = sim.compute_instance(d);
      a.multiprocessorCount = ci_sm_count(gpu.mig, gi, ci.slices);
      a.sharedCopyEngineCount = gi.profile.copy_engines;
      a.sharedDecoderCount = gi.profile.decoders;
      a.sharedEncoderCount = gi.profile.encoders;
      a.sharedJpegCount = gi.profile.jpegs;
      a.sharedOfaCount = gi.profile.ofas;
      a.gpuInstanceSliceCount = gi.profile.compute_slices;
      a.computeInstanceSliceCount = ci.slices;
      a.memorySizeMB = gi.profile.memory_mib;
    } else {
      // As NVML does (seen on an H100 with driver 580): attributes are a MIG device's only.
      return NVML_ERROR_NOT_SUPPORTED;
    }
    *attributes = a;
    return NVML_SUCCESS;
  });
}
KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetAttributes(nvmlDevice_t device, nvmlDeviceAttributes_t* attributes) {
  return nvmlDeviceGetAttributes_v2(device, attributes);
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceProfileInfo(nvmlDevice_t device, unsigned int profile,
                                                                  nvmlGpuInstanceProfileInfo_t* info) {
  return device_call(device, "nvmlDeviceGetGpuInstanceProfileInfo", [&](Simulator& sim, nvmlDevice_st& d) {
    if (info == nullptr || profile >= NVML_GPU_INSTANCE_PROFILE_COUNT) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = require_mig(sim, d, false); rc != NVML_SUCCESS) return rc;
    const auto& profiles = sim.gpu(d).mig.table->profiles;
    auto p = std::find_if(profiles.begin(), profiles.end(), [&](const GiProfile& g) { return g.profile_index == profile; });
    if (p == profiles.end()) return NVML_ERROR_NOT_SUPPORTED;
    nvmlGpuInstanceProfileInfo_t out{};
    out.id = p->id;
    out.isP2pSupported = 0;
    out.sliceCount = p->compute_slices;
    out.instanceCount = p->instance_count;
    out.multiprocessorCount = p->sm_count;
    out.copyEngineCount = p->copy_engines;
    out.decoderCount = p->decoders;
    out.encoderCount = p->encoders;
    out.jpegCount = p->jpegs;
    out.ofaCount = p->ofas;
    out.memorySizeMB = p->memory_mib;
    *info = out;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstancePossiblePlacements_v2(nvmlDevice_t device, unsigned int profileId,
                                                                            nvmlGpuInstancePlacement_t* placements,
                                                                            unsigned int* count) {
  return device_call(device, "nvmlDeviceGetGpuInstancePossiblePlacements_v2", [&](Simulator& sim, nvmlDevice_st& d) {
    if (count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = require_mig(sim, d, false); rc != NVML_SUCCESS) return rc;
    const GiProfile* p = profile_by_id(sim.gpu(d).mig, profileId);
    if (p == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const auto n = static_cast<unsigned>(p->placements.size());
    if (placements == nullptr) {
      *count = n;
      return NVML_SUCCESS;
    }
    if (*count < n) {
      *count = n;
      return NVML_ERROR_INSUFFICIENT_SIZE;
    }
    for (unsigned i = 0; i < n; ++i) placements[i] = {p->placements[i], p->memory_slices};
    *count = n;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstances(nvmlDevice_t device, unsigned int profileId,
                                                        nvmlGpuInstance_t* gpuInstances, unsigned int* count) {
  return device_call(device, "nvmlDeviceGetGpuInstances", [&](Simulator& sim, nvmlDevice_st& d) {
    if (gpuInstances == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = require_mig(sim, d, true); rc != NVML_SUCCESS) return rc;
    if (profile_by_id(sim.gpu(d).mig, profileId) == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    const auto& instances = sim.gpu(d).mig.instances;
    unsigned n = 0;
    for (unsigned i = 0; i < instances.size(); ++i)
      if (instances[i].profile.id == profileId) gpuInstances[n++] = sim.gi_handle(d.gpu, i);
    *count = n;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetGpuInstanceById(nvmlDevice_t device, unsigned int id, nvmlGpuInstance_t* gpuInstance) {
  return device_call(device, "nvmlDeviceGetGpuInstanceById", [&](Simulator& sim, nvmlDevice_st& d) {
    if (gpuInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (nvmlReturn_t rc = require_mig(sim, d, true); rc != NVML_SUCCESS) return rc;
    const auto& instances = sim.gpu(d).mig.instances;
    for (unsigned i = 0; i < instances.size(); ++i)
      if (instances[i].id == id) {
        *gpuInstance = sim.gi_handle(d.gpu, i);
        return NVML_SUCCESS;
      }
    return NVML_ERROR_NOT_FOUND;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetInfo(nvmlGpuInstance_t gpuInstance, nvmlGpuInstanceInfo_t* info) {
  return gi_call(gpuInstance, "nvmlGpuInstanceGetInfo", [&](Simulator&, const GpuInstance& gi) {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlGpuInstanceInfo_t out{};
    out.device = gpuInstance->device;
    out.id = gi.id;
    out.profileId = gi.profile.id;
    out.placement = {gi.placement, gi.profile.memory_slices};
    *info = out;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceById(nvmlGpuInstance_t gpuInstance, unsigned int id,
                                                                    nvmlComputeInstance_t* computeInstance) {
  return gi_call(gpuInstance, "nvmlGpuInstanceGetComputeInstanceById", [&](Simulator& sim, const GpuInstance& gi) {
    if (computeInstance == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    for (unsigned i = 0; i < gi.compute_instances.size(); ++i)
      if (gi.compute_instances[i].id == id) {
        *computeInstance = sim.ci_handle(gpuInstance->device->gpu, gpuInstance->gi, i);
        return NVML_SUCCESS;
      }
    return NVML_ERROR_NOT_FOUND;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstances(nvmlGpuInstance_t gpuInstance, unsigned int profileId,
                                                                 nvmlComputeInstance_t* computeInstances, unsigned int* count) {
  return gi_call(gpuInstance, "nvmlGpuInstanceGetComputeInstances", [&](Simulator& sim, const GpuInstance& gi) {
    if (computeInstances == nullptr || count == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    auto slices = compute_profile_slices(profileId);
    if (!slices) return NVML_ERROR_INVALID_ARGUMENT;
    unsigned n = 0;
    for (unsigned i = 0; i < gi.compute_instances.size(); ++i)
      if (gi.compute_instances[i].slices == *slices)
        computeInstances[n++] = sim.ci_handle(gpuInstance->device->gpu, gpuInstance->gi, i);
    *count = n;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlGpuInstanceGetComputeInstanceProfileInfo(nvmlGpuInstance_t gpuInstance, unsigned int profile,
                                                                           unsigned int engProfile,
                                                                           nvmlComputeInstanceProfileInfo_t* info) {
  return gi_call(gpuInstance, "nvmlGpuInstanceGetComputeInstanceProfileInfo", [&](Simulator& sim, const GpuInstance& gi) {
    if (info == nullptr || profile >= NVML_COMPUTE_INSTANCE_PROFILE_COUNT ||
        engProfile >= NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT)
      return NVML_ERROR_INVALID_ARGUMENT;
    auto slices = compute_profile_slices(profile);
    // The _REV1 (media-extension) compute profile exists on none of the simulated products.
    if (!slices || profile == NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1 || *slices > gi.profile.compute_slices)
      return NVML_ERROR_NOT_SUPPORTED;
    const Mig& mig = sim.gpu(*gpuInstance->device).mig;
    nvmlComputeInstanceProfileInfo_t out{};
    out.id = profile;
    out.sliceCount = *slices;
    out.instanceCount = gi.profile.compute_slices / *slices;
    out.multiprocessorCount = ci_sm_count(mig, gi, *slices);
    out.sharedCopyEngineCount = gi.profile.copy_engines;
    out.sharedDecoderCount = gi.profile.decoders;
    out.sharedEncoderCount = gi.profile.encoders;
    out.sharedJpegCount = gi.profile.jpegs;
    out.sharedOfaCount = gi.profile.ofas;
    *info = out;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo_v2(nvmlComputeInstance_t computeInstance, nvmlComputeInstanceInfo_t* info) {
  return ci_call(computeInstance, "nvmlComputeInstanceGetInfo_v2", [&](Simulator& sim) {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *info = ci_info(sim, computeInstance);
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlComputeInstanceGetInfo(nvmlComputeInstance_t computeInstance, ComputeInstanceInfoV1* info) {
  return ci_call(computeInstance, "nvmlComputeInstanceGetInfo", [&](Simulator& sim) {
    if (info == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    nvmlComputeInstanceInfo_t full = ci_info(sim, computeInstance);
    *info = ComputeInstanceInfoV1{full.device, full.gpuInstance, full.id, full.profileId};
    return NVML_SUCCESS;
  });
}

static_assert(std::is_same_v<decltype(&nvmlDeviceGetMigMode), nvmlDeviceGetMigMode_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetMaxMigDeviceCount), nvmlDeviceGetMaxMigDeviceCount_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetMigDeviceHandleByIndex), nvmlDeviceGetMigDeviceHandleByIndex_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceIsMigDeviceHandle), nvmlDeviceIsMigDeviceHandle_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetDeviceHandleFromMigDeviceHandle), nvmlDeviceGetDeviceHandleFromMigDeviceHandle_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetGpuInstanceId), nvmlDeviceGetGpuInstanceId_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetComputeInstanceId), nvmlDeviceGetComputeInstanceId_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetAttributes_v2), nvmlDeviceGetAttributes_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetGpuInstanceProfileInfo), nvmlDeviceGetGpuInstanceProfileInfo_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetGpuInstancePossiblePlacements_v2), nvmlDeviceGetGpuInstancePossiblePlacements_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetGpuInstances), nvmlDeviceGetGpuInstances_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetGpuInstanceById), nvmlDeviceGetGpuInstanceById_fn>);
static_assert(std::is_same_v<decltype(&nvmlGpuInstanceGetInfo), nvmlGpuInstanceGetInfo_fn>);
static_assert(std::is_same_v<decltype(&nvmlGpuInstanceGetComputeInstanceById), nvmlGpuInstanceGetComputeInstanceById_fn>);
static_assert(std::is_same_v<decltype(&nvmlGpuInstanceGetComputeInstances), nvmlGpuInstanceGetComputeInstances_fn>);
static_assert(std::is_same_v<decltype(&nvmlGpuInstanceGetComputeInstanceProfileInfo), nvmlGpuInstanceGetComputeInstanceProfileInfo_fn>);
static_assert(std::is_same_v<decltype(&nvmlComputeInstanceGetInfo_v2), nvmlComputeInstanceGetInfo_fn>);
