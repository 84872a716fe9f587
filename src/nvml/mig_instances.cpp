#include "nvml/mig_instances.h"

#include <dlfcn.h>
#include <fmt/format.h>

namespace kgpu {

typedef nvmlReturn_t (*CiByIdFn)(nvmlGpuInstance_t, unsigned, nvmlComputeInstance_t*);

struct MigInstances::Symbols {
  nvmlDeviceGetGpuInstancePossiblePlacements_fn placements = nullptr;
  nvmlDeviceSetMigMode_fn set_mode = nullptr;
  nvmlDeviceCreateGpuInstanceWithPlacement_fn create_gi = nullptr;
  nvmlGpuInstanceCreateComputeInstance_fn create_ci = nullptr;
  nvmlComputeInstanceDestroy_fn destroy_ci = nullptr;
  nvmlGpuInstanceDestroy_fn destroy_gi = nullptr;
  nvmlGpuInstanceGetComputeInstanceProfileInfo_fn ci_profile = nullptr;
  nvmlComputeInstanceGetInfo_fn ci_info = nullptr;
  nvmlDeviceGetGpuInstanceById_fn gi_by_id = nullptr;
  nvmlGpuInstanceGetComputeInstanceById_fn ci_by_id = nullptr;
  nvmlDeviceGetUUID_fn uuid = nullptr;
  std::vector<std::string> missing;
};

namespace {

constexpr nvmlReturn_t kAbsent = NVML_ERROR_FUNCTION_NOT_FOUND;

template <typename Fn>
void bind_one(void* handle, const char* name, Fn& out, std::vector<std::string>& missing) {
  // dlsym returns void*; converting it to a function pointer is what POSIX requires to work.
  out = reinterpret_cast<Fn>(::dlsym(handle, name));
  if (out == nullptr) missing.emplace_back(name);
}

bool gone(nvmlReturn_t code) { return code == NVML_ERROR_NOT_FOUND || code == NVML_ERROR_NOT_SUPPORTED; }

}  // namespace

// Each wrapper: absent symbol -> FUNCTION_NOT_FOUND, NVML failure -> an error naming the call.
#define KGPU_MIG_CALL(T, fn, name, ...)                            \
  do {                                                             \
    if (!(fn)) return fail<T>(name, kAbsent);                      \
    if (nvmlReturn_t rc_ = (fn)(__VA_ARGS__); rc_ != NVML_SUCCESS) \
      return fail<T>(name, rc_);                                   \
  } while (0)

Result<std::shared_ptr<const MigInstances>> MigInstances::bind(std::shared_ptr<const NvmlLibrary> library) {
  if (!library) return Error{Error::Code::Internal, "MigInstances::bind: no NVML library"};
  void* handle = ::dlopen(library->path().c_str(), RTLD_LAZY | RTLD_NOLOAD);
  if (handle == nullptr) {
    const char* e = ::dlerror();
    return Error{Error::Code::Unavailable,
                 fmt::format("dynamic MIG: {} is not loaded: {}", library->path(), e ? e : "unknown dlopen error")};
  }
  return std::shared_ptr<const MigInstances>(new MigInstances(std::move(library), handle));
}

MigInstances::MigInstances(std::shared_ptr<const NvmlLibrary> library, void* handle)
    : library_(std::move(library)), handle_(handle), sym_(std::make_unique<Symbols>()) {
  Symbols& s = *sym_;
  bind_one(handle_, "nvmlDeviceGetGpuInstancePossiblePlacements_v2", s.placements, s.missing);
  bind_one(handle_, "nvmlDeviceSetMigMode", s.set_mode, s.missing);
  bind_one(handle_, "nvmlDeviceCreateGpuInstanceWithPlacement", s.create_gi, s.missing);
  bind_one(handle_, "nvmlGpuInstanceCreateComputeInstance", s.create_ci, s.missing);
  bind_one(handle_, "nvmlComputeInstanceDestroy", s.destroy_ci, s.missing);
  bind_one(handle_, "nvmlGpuInstanceDestroy", s.destroy_gi, s.missing);
  bind_one(handle_, "nvmlGpuInstanceGetComputeInstanceProfileInfo", s.ci_profile, s.missing);
  bind_one(handle_, "nvmlComputeInstanceGetInfo_v2", s.ci_info, s.missing);
  bind_one(handle_, "nvmlDeviceGetGpuInstanceById", s.gi_by_id, s.missing);
  bind_one(handle_, "nvmlGpuInstanceGetComputeInstanceById", s.ci_by_id, s.missing);
  bind_one(handle_, "nvmlDeviceGetUUID", s.uuid, s.missing);
}

// The RTLD_NOLOAD open took a reference; give it back (NvmlLibrary keeps its own).
MigInstances::~MigInstances() {
  if (handle_ != nullptr) ::dlclose(handle_);
}

std::string MigInstances::missing() const {
  std::string out;
  for (const auto& m : sym_->missing) out += (out.empty() ? "" : ", ") + m;
  return out;
}

template <typename T>
NvmlResult<T> MigInstances::fail(const char* call, nvmlReturn_t code) const {
  return NvmlResult<T>(code, Error{nvml_error_code(code), fmt::format("{}: {}", call, library_->error_string(code))});
}

NvmlResult<std::vector<nvmlGpuInstancePlacement_t>> MigInstances::possible_placements(nvmlDevice_t gpu,
                                                                                      unsigned profile_id) const {
  using T = std::vector<nvmlGpuInstancePlacement_t>;
  // NVML_MAX_GPU_INSTANCE placements is 8 on every MIG product; ask with room for twice that.
  nvmlGpuInstancePlacement_t buf[16] = {};
  unsigned count = 16;
  KGPU_MIG_CALL(T, sym_->placements, "nvmlDeviceGetGpuInstancePossiblePlacements_v2", gpu, profile_id, buf, &count);
  if (count > 16) count = 16;
  return T(buf, buf + count);
}

NvmlResult<nvmlReturn_t> MigInstances::set_mig_mode(nvmlDevice_t gpu, bool enabled) const {
  nvmlReturn_t activation = NVML_SUCCESS;
  KGPU_MIG_CALL(nvmlReturn_t, sym_->set_mode, "nvmlDeviceSetMigMode", gpu,
                enabled ? NVML_DEVICE_MIG_ENABLE : NVML_DEVICE_MIG_DISABLE, &activation);
  return activation;
}

NvmlResult<nvmlGpuInstance_t> MigInstances::create_gpu_instance(nvmlDevice_t gpu, unsigned profile_id,
                                                                nvmlGpuInstancePlacement_t placement) const {
  nvmlGpuInstance_t gi = nullptr;
  KGPU_MIG_CALL(nvmlGpuInstance_t, sym_->create_gi, "nvmlDeviceCreateGpuInstanceWithPlacement", gpu, profile_id,
                &placement, &gi);
  return gi;
}

NvmlResult<nvmlComputeInstance_t> MigInstances::create_compute_instance(nvmlGpuInstance_t gi, unsigned ci_profile) const {
  nvmlComputeInstance_t ci = nullptr;
  KGPU_MIG_CALL(nvmlComputeInstance_t, sym_->create_ci, "nvmlGpuInstanceCreateComputeInstance", gi, ci_profile, &ci);
  return ci;
}

NvmlStatus MigInstances::destroy_compute_instance(nvmlComputeInstance_t ci) const {
  KGPU_MIG_CALL(Ok, sym_->destroy_ci, "nvmlComputeInstanceDestroy", ci);
  return Ok{};
}

NvmlStatus MigInstances::destroy_gpu_instance(nvmlGpuInstance_t gi) const {
  KGPU_MIG_CALL(Ok, sym_->destroy_gi, "nvmlGpuInstanceDestroy", gi);
  return Ok{};
}

NvmlResult<unsigned> MigInstances::full_compute_profile(nvmlGpuInstance_t gi) const {
  if (!sym_->ci_profile) return fail<unsigned>("nvmlGpuInstanceGetComputeInstanceProfileInfo", kAbsent);
  unsigned best = NVML_COMPUTE_INSTANCE_PROFILE_COUNT, best_slices = 0;
  for (unsigned p = 0; p < NVML_COMPUTE_INSTANCE_PROFILE_COUNT; ++p) {
    // The _REV1 profile is the media-extension variant; NVIDIA's driver skips it too.
    if (p == NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1) continue;
    nvmlComputeInstanceProfileInfo_t info{};
    if (sym_->ci_profile(gi, p, NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED, &info) != NVML_SUCCESS) continue;
    if (info.sliceCount > best_slices) {
      best_slices = info.sliceCount;
      best = p;
    }
  }
  if (best == NVML_COMPUTE_INSTANCE_PROFILE_COUNT)
    return fail<unsigned>("nvmlGpuInstanceGetComputeInstanceProfileInfo", NVML_ERROR_NOT_SUPPORTED);
  return best;
}

NvmlResult<CreatedMigInstance> MigInstances::create(nvmlDevice_t gpu, unsigned profile_id,
                                                    nvmlGpuInstancePlacement_t placement) const {
  using T = CreatedMigInstance;
  auto gi = create_gpu_instance(gpu, profile_id, placement);
  if (!gi) return NvmlResult<T>(gi.nvml_code(), gi.error());
  // From here a failure must take the GPU instance down again: nothing half-made stays.
  auto undo = [&](const char* call, nvmlReturn_t code) {
    if (sym_->destroy_gi) (void)sym_->destroy_gi(*gi);
    return fail<T>(call, code);
  };
  nvmlGpuInstanceInfo_t gi_info{};
  if (auto info = library_->gpu_instance_info(*gi); !info)
    return undo("nvmlGpuInstanceGetInfo", info.nvml_code());
  else
    gi_info = *info;
  auto ci_profile = full_compute_profile(*gi);
  if (!ci_profile) return undo("nvmlGpuInstanceGetComputeInstanceProfileInfo", ci_profile.nvml_code());
  auto ci = create_compute_instance(*gi, *ci_profile);
  if (!ci) return undo("nvmlGpuInstanceCreateComputeInstance", ci.nvml_code());
  auto undo_ci = [&](const char* call, nvmlReturn_t code) {
    if (sym_->destroy_ci) (void)sym_->destroy_ci(*ci);
    return undo(call, code);
  };
  if (!sym_->ci_info) return undo_ci("nvmlComputeInstanceGetInfo_v2", kAbsent);
  nvmlComputeInstanceInfo_t ci_info{};
  if (nvmlReturn_t rc = sym_->ci_info(*ci, &ci_info); rc != NVML_SUCCESS)
    return undo_ci("nvmlComputeInstanceGetInfo_v2", rc);
  auto uuid = mig_uuid(gpu, ci_info.device, gi_info.id, ci_info.id);
  if (!uuid) return undo_ci("nvmlDeviceGetUUID", uuid.nvml_code());
  return CreatedMigInstance{gi_info.id, ci_info.id, *uuid};
}

NvmlResult<std::string> MigInstances::mig_uuid(nvmlDevice_t gpu, nvmlDevice_t ci_device, unsigned gi_id,
                                               unsigned ci_id) const {
  // NVIDIA's driver reads the MIG device's uuid from the CI info's device (walking all MIG devices
  // took it seconds under load), while nvml.h calls that field the parent device: take it when it is
  // a MIG device's, else walk the parent's MIG devices for the (GI, CI) pair.
  if (auto uuid = library_->uuid(ci_device); uuid && uuid->rfind("MIG-", 0) == 0) return *uuid;
  auto max = library_->max_mig_device_count(gpu);
  if (!max) return NvmlResult<std::string>(max.nvml_code(), max.error());
  for (unsigned i = 0; i < *max; ++i) {
    auto mig = library_->mig_device_by_index(gpu, i);
    if (!mig) continue;
    auto gi = library_->gpu_instance_id(*mig);
    auto ci = library_->compute_instance_id(*mig);
    if (gi && ci && *gi == gi_id && *ci == ci_id) return library_->uuid(*mig);
  }
  return fail<std::string>("nvmlDeviceGetMigDeviceHandleByIndex", NVML_ERROR_NOT_FOUND);
}

NvmlStatus MigInstances::destroy(nvmlDevice_t gpu, unsigned gi_id, unsigned ci_id) const {
  if (!sym_->gi_by_id) return fail<Ok>("nvmlDeviceGetGpuInstanceById", kAbsent);
  if (!sym_->ci_by_id) return fail<Ok>("nvmlGpuInstanceGetComputeInstanceById", kAbsent);
  nvmlGpuInstance_t gi = nullptr;
  if (nvmlReturn_t rc = sym_->gi_by_id(gpu, gi_id, &gi); rc != NVML_SUCCESS)
    return gone(rc) ? NvmlStatus(Ok{}) : fail<Ok>("nvmlDeviceGetGpuInstanceById", rc);
  nvmlComputeInstance_t ci = nullptr;
  if (nvmlReturn_t rc = sym_->ci_by_id(gi, ci_id, &ci); rc == NVML_SUCCESS) {
    if (auto st = destroy_compute_instance(ci); !st) return st;
  } else if (!gone(rc)) {
    return fail<Ok>("nvmlGpuInstanceGetComputeInstanceById", rc);
  }
  return destroy_gpu_instance(gi);
}

}  // namespace kgpu
