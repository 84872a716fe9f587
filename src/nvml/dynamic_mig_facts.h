#pragma once
// What NVML says of one GPU's GPU-instance profiles for dynamic MIG (issue 42): every profile it
// offers with its capacities and possible placements, the facts dra/model/dynamic_mig.h lays the
// GPU out from. Read through NvmlLibrary (profile info) and MigInstances (placements); both answer
// on a MIG-capable GPU whatever its MIG mode.
#include <cstdint>
#include <vector>

#include "core/result.h"
#include "dra/model/dynamic_mig.h"
#include "nvml/mig_instances.h"
#include "nvml/nvml_library.h"

namespace kgpu {

// The GPU-instance profile indexes walked (NVML_GPU_INSTANCE_PROFILE_*), in order: the base
// profiles 1g..8g and 1g with two memory slices (REV2, "1g.20gb" on an H100). The media-extension
// variants (+me, REV1) are left out, as NVIDIA's DynamicMIG count leaves them (19 devices per H100):
// each GPU has one set of media engines, and a claim for them names them.
std::vector<unsigned> dynamic_mig_profile_indexes();

// Each profile NVML answers, named as kgpu names MIG profiles ("3g.40gb"; mig_profile_name with the
// compute instance spanning the GPU instance, NVIDIA's C == G), with its placements. A profile NVML
// does not offer on this GPU (NOT_SUPPORTED, INVALID_ARGUMENT) is skipped; any other failure, or an
// entry point the driver lacks, is an error naming the call.
Result<std::vector<dra::MigProfileFacts>> read_dynamic_mig_profiles(const NvmlLibrary& nvml, const MigInstances& mig,
                                                                    nvmlDevice_t gpu, uint64_t gpu_memory_bytes);

}  // namespace kgpu
