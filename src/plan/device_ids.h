#pragma once
// Device IDs. Two kinds, on purpose (NVIDIA's plugin draws the same line, reference §1.1):
//  - advertised IDs, what the kubelet sees (ListAndWatch, Allocate requests, its checkpoint,
//    PodResources): always stable, whatever deviceIDStrategy says. NVIDIA: "GPU-<uuid>" and
//    "MIG-<uuid>"; other vendors: the backend's stable ID (Gpu::uuid). Replicas append "::<n>".
//    Only a device without any UUID falls back to its index ("i", MIG "i:j").
//  - runtime IDs, what the container runtime sees (NVIDIA_VISIBLE_DEVICES, volume-mount names,
//    CDI device names, CDI annotations): deviceIDStrategy applies, "uuid" gives the UUIDs above,
//    "index" gives "i" for a GPU and "i:j" for MIG device j on GPU i.
// Indices change meaning when the driver enumerates GPUs differently (reboot, GPU replaced), so
// they must never reach the kubelet: a checkpoint written with UUIDs stays valid across the switch.
#include <string>
#include <string_view>

#include "config/config.h"
#include "core/inventory.h"

namespace kgpu {

std::string advertised_gpu_id(const Gpu& gpu);
std::string advertised_mig_id(const Gpu& gpu, const MigDevice& mig);

// Runtime-facing IDs (deviceIDStrategy applies to NVIDIA devices only).
std::string gpu_device_id(const Config& config, const Gpu& gpu);
std::string mig_device_id(const Config& config, const Gpu& gpu, const MigDevice& mig);

std::string replica_id(std::string_view base, int replica);
// The ID without its "::<n>" replica suffix (the whole ID when it has none).
std::string_view strip_replica(std::string_view id);

}  // namespace kgpu
