#pragma once
// An H100 80GB's MIG profiles as NVML reports them (the fake NVML's h100-80gb table; NVIDIA's MIG
// user guide), for the dynamic MIG tests and bench_dra_dynamic_mig_slices.
#include <cstdint>
#include <string>

#include "dra/model/dynamic_mig.h"

namespace kgpu::dra::testing {

inline DynamicMigGpuFacts h100_mig_facts(unsigned minor) {
  constexpr uint64_t kMiB = 1024ULL * 1024;
  DynamicMigGpuFacts g;
  g.minor = minor;
  g.uuid = "GPU-00000000-0000-4000-8000-00000000000" + std::to_string(minor);
  //          name       id  SMs  CE DEC ENC JPG OFA  MiB   size  starts
  g.profiles = {{"1g.10gb", 19, 16, 1, 1, 0, 1, 0, 9984 * kMiB, 1, {0, 1, 2, 3, 4, 5, 6}},
                {"1g.20gb", 15, 26, 1, 1, 0, 1, 0, 20096 * kMiB, 2, {0, 2, 4, 6}},
                {"2g.20gb", 14, 32, 2, 2, 0, 2, 0, 20096 * kMiB, 2, {0, 2, 4}},
                {"3g.40gb", 9, 60, 3, 3, 0, 3, 0, 40448 * kMiB, 4, {0, 4}},
                {"4g.40gb", 5, 64, 4, 4, 0, 4, 0, 40448 * kMiB, 4, {0}},
                {"7g.80gb", 0, 132, 8, 7, 0, 7, 1, 81152 * kMiB, 8, {0}}};
  return g;
}

}  // namespace kgpu::dra::testing
