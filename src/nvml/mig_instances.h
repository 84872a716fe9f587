#pragma once
// MigInstances: the NVML calls that make and unmake MIG instances (dynamic MIG, issue 42), bound
// from the library NvmlLibrary already loaded. They live beside NvmlLibrary rather than in it so
// that only the code that creates instances depends on them. Every entry point is optional: a
// driver without one answers FUNCTION_NOT_FOUND from that call, naming it; nothing crashes and
// nothing else changes. Thread-safe as NvmlLibrary is (immutable after bind, NVML thread-safe).
#include <memory>
#include <string>
#include <vector>

#include "nvml/nvml_abi_dynamic_mig.h"
#include "nvml/nvml_library.h"

namespace kgpu {

// What create() made: the ids that find it again after a restart, and its MIG device's uuid.
struct CreatedMigInstance {
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
  std::string mig_uuid;
};

class MigInstances {
 public:
  // Binds the entry points of `library`'s file, which must be loaded (dlopen RTLD_NOLOAD: the same
  // copy, no second one).
  static Result<std::shared_ptr<const MigInstances>> bind(std::shared_ptr<const NvmlLibrary> library);
  ~MigInstances();
  MigInstances(const MigInstances&) = delete;
  MigInstances& operator=(const MigInstances&) = delete;

  // Which of the entry points the library lacks ("" when it has them all), for the operator.
  std::string missing() const;

  NvmlResult<std::vector<nvmlGpuInstancePlacement_t>> possible_placements(nvmlDevice_t gpu, unsigned profile_id) const;
  // MIG mode on or off; the value is NVML's activation status (RESET_REQUIRED: only pending).
  NvmlResult<nvmlReturn_t> set_mig_mode(nvmlDevice_t gpu, bool enabled) const;
  NvmlResult<nvmlGpuInstance_t> create_gpu_instance(nvmlDevice_t gpu, unsigned profile_id,
                                                    nvmlGpuInstancePlacement_t placement) const;
  NvmlResult<nvmlComputeInstance_t> create_compute_instance(nvmlGpuInstance_t gi, unsigned ci_profile) const;
  NvmlStatus destroy_compute_instance(nvmlComputeInstance_t ci) const;
  NvmlStatus destroy_gpu_instance(nvmlGpuInstance_t gi) const;

  // A dynamic MIG device in one step: the GPU instance at `placement`, one compute instance
  // spanning it, its MIG device's uuid. When a later step fails the GPU instance is destroyed
  // again, so a failed create leaves nothing behind.
  NvmlResult<CreatedMigInstance> create(nvmlDevice_t gpu, unsigned profile_id, nvmlGpuInstancePlacement_t placement) const;
  // Destroys compute instance `ci_id` in GPU instance `gi_id`, then the GPU instance. One already
  // gone (NOT_FOUND), or MIG off altogether (NOT_SUPPORTED), counts as destroyed.
  NvmlStatus destroy(nvmlDevice_t gpu, unsigned gi_id, unsigned ci_id) const;

  struct Symbols;

 private:
  MigInstances(std::shared_ptr<const NvmlLibrary> library, void* handle);
  template <typename T>
  NvmlResult<T> fail(const char* call, nvmlReturn_t code) const;
  // The compute-instance profile that spans the whole GPU instance (the largest it supports).
  NvmlResult<unsigned> full_compute_profile(nvmlGpuInstance_t gi) const;
  NvmlResult<std::string> mig_uuid(nvmlDevice_t gpu, nvmlDevice_t ci_device, unsigned gi_id, unsigned ci_id) const;

  std::shared_ptr<const NvmlLibrary> library_;
  void* handle_ = nullptr;
  std::unique_ptr<Symbols> sym_;
};

}  // namespace kgpu
