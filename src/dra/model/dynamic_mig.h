#pragma once
// Dynamic MIG's publication as plain values (issue 42; facts in docs/dynamic-mig.md): for one GPU,
// its full device and one device per possible GPU-instance placement of every profile, all
// consuming one counter set of the GPU, so the scheduler can never give out two overlapping
// placements or a placement and the whole GPU. Names, capacities and counters as NVIDIA's
// DynamicMIG publishes them, so claims written for its driver select the same devices. Pure.
#include <cstdint>
#include <string>
#include <vector>

#include "dra/model/dra_device.h"

namespace kgpu::dra {

// One GPU-instance profile as NVML reports it (nvmlGpuInstanceProfileInfo_t and the placements of
// nvmlDeviceGetGpuInstancePossiblePlacements).
struct MigProfileFacts {
  std::string name;  // "3g.40gb"
  unsigned id = 0;   // the profile id (9 for 3g.40gb)
  uint64_t multiprocessors = 0, copy_engines = 0, decoders = 0, encoders = 0, jpeg_engines = 0, ofa_engines = 0;
  uint64_t memory_bytes = 0;
  unsigned placement_size = 0;           // memory slices one instance spans
  std::vector<unsigned> placement_starts;
};

struct DynamicMigGpuFacts {
  unsigned minor = 0;  // names follow the minor, as NVIDIA's do
  std::string uuid;
  // False on an Ampere GPU with MIG on: leaving MIG needs a reset, so only its placements are
  // offered (NVIDIA does the same).
  bool offer_full_gpu = true;
  std::vector<MigProfileFacts> profiles;
};

struct DynamicMigDevice {
  std::string name;                 // "gpu-0" or "gpu-0-mig-3g40gb-9-4"
  std::string profile;              // "" for the full GPU
  unsigned profile_id = 0, placement_start = 0, placement_size = 0;
  std::vector<Counter> capacity;    // capacity names (camelCase), sorted
  std::vector<Counter> consumes;    // from the GPU's counter set, sorted
};

struct DynamicMigLayout {
  unsigned gpu_minor = 0;           // the parent's minor: its device names start "gpu-<minor>"
  std::string gpu_uuid;
  std::string counter_set;          // "gpu-0-counter-set"
  std::vector<Counter> counters;    // the set's counters, sorted
  std::vector<DynamicMigDevice> devices;  // sorted by name (NVIDIA's order; the scheduler tries them in it)
};

DynamicMigLayout dynamic_mig_layout(const DynamicMigGpuFacts& gpu);

// "gpu-<minor>-mig-<profile without dots>-<profile id>-<start>", NVIDIA's canonical placement name.
std::string dynamic_mig_device_name(unsigned minor, const std::string& profile, unsigned profile_id, unsigned start);
std::string dynamic_mig_counter_set_name(unsigned minor);

}  // namespace kgpu::dra
