#pragma once
// What the NVIDIA kernel driver says of each GPU it probed, in
// <proc_root>/driver/nvidia/gpus/<bus id>/information: written when the driver bound the device, so
// it still names a GPU that NVML can no longer open (lost at start-up, fallen off the bus). kgpu
// uses it only for GPUs NVML counts but cannot identify, so they are published unhealthy (a
// gpu-lost taint, an unhealthy device-plugin device) instead of vanishing without a word.
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"

namespace kgpu {

struct ProcfsGpu {
  std::string uuid;          // "GPU UUID"
  std::string model;         // "Model"
  std::string bus_location;  // "Bus Location": "0000:07:00.0"
  int minor = -1;            // "Device Minor"
  bool excluded = false;     // "GPU Excluded: Yes" (NVreg_ExcludedGpus): not NVML's, never ours
};

// One information file's text ("Key: \t value" lines; unknown keys are ignored). An error names
// what is missing or malformed: a UUID that is not GPU-..., no bus location, a minor that is not a
// number. Pure.
Result<ProcfsGpu> parse_procfs_gpu_information(const std::string& text);

// Every <proc_root>/driver/nvidia/gpus/*/information that parses, in bus order; a file that does not
// parse is reported in `problems` (path and reason) and skipped.
std::vector<ProcfsGpu> read_procfs_gpus(const std::string& proc_root, std::vector<std::string>& problems);

}  // namespace kgpu
