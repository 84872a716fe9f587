#include "nvml/dynamic_mig_facts.h"

#include "nvml/mig_facts.h"

namespace kgpu {
namespace {

constexpr uint64_t kMiB = 1024ULL * 1024;

bool not_offered(nvmlReturn_t code) {
  return code == NVML_ERROR_NOT_SUPPORTED || code == NVML_ERROR_INVALID_ARGUMENT;
}

}  // namespace

std::vector<unsigned> dynamic_mig_profile_indexes() {
  return {NVML_GPU_INSTANCE_PROFILE_1_SLICE, NVML_GPU_INSTANCE_PROFILE_2_SLICE, NVML_GPU_INSTANCE_PROFILE_3_SLICE,
          NVML_GPU_INSTANCE_PROFILE_4_SLICE, NVML_GPU_INSTANCE_PROFILE_7_SLICE, NVML_GPU_INSTANCE_PROFILE_8_SLICE,
          NVML_GPU_INSTANCE_PROFILE_6_SLICE, NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2};
}

Result<std::vector<dra::MigProfileFacts>> read_dynamic_mig_profiles(const NvmlLibrary& nvml, const MigInstances& mig,
                                                                    nvmlDevice_t gpu, uint64_t gpu_memory_bytes) {
  std::vector<dra::MigProfileFacts> out;
  for (unsigned index : dynamic_mig_profile_indexes()) {
    auto info = nvml.gpu_instance_profile_info(gpu, index);
    if (!info) {
      if (not_offered(info.nvml_code())) continue;
      return info.error();
    }
    auto placements = mig.possible_placements(gpu, info->id);
    if (!placements) {
      if (not_offered(placements.nvml_code())) continue;
      return placements.error();
    }
    if (placements->empty()) continue;
    const int slices = static_cast<int>(info->sliceCount);
    dra::MigProfileFacts p;
    p.name = mig_profile_name(slices, slices, info->memorySizeMB, gpu_memory_bytes, index);
    p.id = info->id;
    p.multiprocessors = info->multiprocessorCount;
    p.copy_engines = info->copyEngineCount;
    p.decoders = info->decoderCount;
    p.encoders = info->encoderCount;
    p.jpeg_engines = info->jpegCount;
    p.ofa_engines = info->ofaCount;
    p.memory_bytes = info->memorySizeMB * kMiB;  // nvml.h: the field is MiB
    p.placement_size = placements->front().size;
    for (const auto& placement : *placements) p.placement_starts.push_back(placement.start);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace kgpu
