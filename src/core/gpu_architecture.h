#pragma once
// The lower-case GPU family name GPU Feature Discovery derives from a CUDA compute capability
// ("ampere", "ada-lovelace", "hopper"), for node labels and for NVML's architecture fallback: one
// table, so a new generation is added once. Pure.
#include <string>

namespace kgpu {

// "" for a compute capability no family is known for.
std::string architecture_from_compute_capability(int cc_major, int cc_minor);

}  // namespace kgpu
