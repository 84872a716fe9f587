// Built-in MIG profile tables of real products (as `nvidia-smi mig -lgip` lists them), and the
// conventions NVML uses to number instances and compute-instance profiles.
#pragma once
#include <optional>
#include <string>

#include "fleet.h"

namespace kgpu::fake_nvml {

// "a100-40gb", "a100-80gb", "h100-80gb", "h200"; nullopt for an unknown name.
std::optional<MigProfileTable> builtin_mig_table(const std::string& name);

// Names of the built-in tables, for error messages.
std::string builtin_mig_table_names();

// The GI id the driver hands out for a profile at a placement when the fleet names none.
unsigned default_gpu_instance_id(const GiProfile& profile, unsigned placement);

// NVML_COMPUTE_INSTANCE_PROFILE_* index for a compute-instance slice count; nullopt if none.
std::optional<unsigned> compute_profile_index(unsigned slices);
// The inverse: slice count of a compute-instance profile index; nullopt for a bad index.
std::optional<unsigned> compute_profile_slices(unsigned profile_index);

}  // namespace kgpu::fake_nvml
