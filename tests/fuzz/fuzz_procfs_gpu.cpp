// Fuzz target: the NVIDIA driver's /proc/driver/nvidia/gpus/<bus>/information, which names a GPU NVML
// cannot open (issue 37). Any input: an error value or a GPU whose fields keep the parser's promises
// (a GPU- UUID, a bus location, a minor of 0-255), never a crash.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "nvml/procfs_gpus.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto gpu = kgpu::parse_procfs_gpu_information(text);
  if (!gpu) return 0;
  if (!gpu->uuid.starts_with("GPU-") || gpu->bus_location.empty() || gpu->minor < 0 || gpu->minor > 255) std::abort();
  return 0;
}
