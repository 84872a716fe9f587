#pragma once
// Device IDs as the kubelet sees them. NVIDIA honours deviceIDStrategy: "uuid" gives GPU-/MIG-
// UUIDs, "index" gives "i" for a GPU and "i:j" for MIG device j on GPU i. Other vendors always use
// the backend's stable ID (Gpu::uuid), or the index when a backend gave none. Replicas append "::<n>".
#include <string>
#include <string_view>

#include "config/config.h"
#include "core/inventory.h"

namespace kgpu {

std::string gpu_device_id(const Config& config, const Gpu& gpu);
std::string mig_device_id(const Config& config, const Gpu& gpu, const MigDevice& mig);
std::string replica_id(std::string_view base, int replica);
// The ID without its "::<n>" replica suffix (the whole ID when it has none).
std::string_view strip_replica(std::string_view id);

}  // namespace kgpu
