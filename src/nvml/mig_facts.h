#pragma once
// Pure helpers that turn raw NVML/driver facts into the names kgpu advertises: MIG profile names,
// MIG capability device nodes, architecture and brand names. No I/O, so they are unit-tested alone.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "core/inventory.h"
#include "core/result.h"

namespace kgpu {

// Memory of a MIG device in whole GB as NVIDIA names profiles: its share of the GPU rounded up to
// eighths, times the GPU's memory in GB rounded up ("1g.5gb" on a 40 GB A100 although 4864 MiB).
uint64_t mig_memory_gb(uint64_t mig_memory_mib, uint64_t gpu_memory_bytes);

// "1g.5gb", "1c.3g.20gb" (compute slices fewer than the GPU instance's), and from the GPU instance
// profile's index (NVML_GPU_INSTANCE_PROFILE_*, not the profile ID a GPU instance reports) the
// suffixes NVIDIA names: "1g.10gb+me" (media extensions), "1g.24gb+me.all", "1g.24gb+gfx", "1g.24gb-me".
std::string mig_profile_name(int gpu_instance_slices, int compute_instance_slices, uint64_t mig_memory_mib,
                             uint64_t gpu_memory_bytes, std::optional<unsigned> gpu_instance_profile_id);

// Linux device minor numbers have 20 bits; a capability minor beyond that is a broken file.
inline constexpr int kMaxCapabilityMinor = (1 << 20) - 1;

// /proc/driver/nvidia-caps/mig-minors: lines "gpu<m>/gi<g>/access <minor>" and
// "gpu<m>/gi<g>/ci<c>/access <minor>" (plus "config"/"monitor" lines, not looked up).
class MigMinors {
 public:
  // Every non-empty line must be "<name> <minor>" with a minor in 0..kMaxCapabilityMinor, and no
  // name or minor may appear twice: a repeated line that silently won could hand a container
  // another capability (the MIG "config" one). Error naming the line otherwise.
  static Result<MigMinors> parse(std::string_view text);
  std::optional<int> gpu_instance(int gpu_minor, int gi) const;
  std::optional<int> compute_instance(int gpu_minor, int gi, int ci) const;
  bool empty() const { return minors_.empty(); }

 private:
  std::map<std::string, int> minors_;  // "gpu0/gi1/ci0" -> minor
  std::set<std::string> names_;         // every name in the file, "config" and "monitor" too
};

// The two /dev/nvidia-caps/nvidia-cap<N> nodes a MIG device needs, or nullopt when either is unknown.
std::optional<std::vector<DeviceNodeRef>> mig_capability_nodes(const MigMinors& minors, int gpu_minor, int gi,
                                                               int ci);

// Lower-case family names as GPU Feature Discovery uses them: "ampere", "ada-lovelace", "hopper".
// From NVML's architecture enum; falls back to the compute capability when that is unknown.
std::string architecture_name(unsigned nvml_architecture, int cc_major, int cc_minor);

// "tesla", "nvidia", "geforce-rtx"...; "" for unknown brands.
std::string brand_name(int nvml_brand);

// NVIDIA's DRA attribute addressingMode, as go-nvlib spells NVML's modes: "HMM", "ATS", "None";
// "" for a value NVML does not define (not published).
std::string addressing_mode_name(unsigned nvml_mode);

// A whole GPU's SM count from its CUDA cores (nvmlDeviceGetNumGpuCores) and compute capability,
// as CUDA derives it (cores per SM: 64 on 6.0, 7.x and 8.0; 128 on 5.x, 6.1/6.2, 8.6-8.9, 9.x and
// later; 192 on 3.x). 0 for a capability before 3.0 or cores that are no whole number of SMs.
int sms_from_cores(unsigned cores, int cc_major, int cc_minor);

// PcieLevel for an nvmlGpuTopologyLevel_t value (Unknown for values NVML does not define).
PcieLevel pcie_level(int nvml_level);

}  // namespace kgpu
