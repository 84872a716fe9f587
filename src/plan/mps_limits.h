#pragma once
// MPS per-client limits. Pure arithmetic shared by Allocate (client env) and the MPS daemon
// (server defaults), so both agree on what one replica is worth.
#include <cstdint>
#include <string>

namespace kgpu {

// Percentage of a GPU's threads for a client holding `received` of the GPU's `replicas`:
// floor(100 × received / replicas), at least 1, at most 100.
int mps_thread_percentage(int replicas, int received);

// Pinned device memory, in MiB, for a client holding `received` of `replicas`:
// floor(memory / replicas) × received, in whole MiB.
uint64_t mps_memory_limit_mib(uint64_t memory_bytes, int replicas, int received);

}  // namespace kgpu
