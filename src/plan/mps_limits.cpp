#include "plan/mps_limits.h"

#include <algorithm>

namespace kgpu {

int mps_thread_percentage(int replicas, int received) {
  if (replicas < 1) replicas = 1;
  const int64_t pct = int64_t{100} * std::max(received, 0) / replicas;
  return static_cast<int>(std::clamp<int64_t>(pct, 1, 100));
}

uint64_t mps_memory_limit_mib(uint64_t memory_bytes, int replicas, int received) {
  if (replicas < 1) replicas = 1;
  received = std::clamp(received, 0, replicas);
  const uint64_t share = memory_bytes / static_cast<uint64_t>(replicas);
  return share * static_cast<uint64_t>(received) / (uint64_t{1} << 20);
}

}  // namespace kgpu
