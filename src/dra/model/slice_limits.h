#pragma once
// The resource.k8s.io validation limits a ResourceSlice must keep. The API server refuses a whole
// slice for one device over a limit, so one MIG device with an attribute too many would take every
// device of the node out of scheduling: kgpu fits each device before publishing, and tests check the
// slices it writes. Each limit is the tightest of Kubernetes 1.32 to 1.35 (k8s.io/api
// resource/v1beta1 and v1 types.go at v0.32.0 to v0.35.0), so a slice valid here is valid on all.
// Pure.
#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "dra/model/dra_device.h"

namespace kgpu::dra {

inline constexpr size_t kMaxAttributesAndCapacitiesPerDevice = 32;  // ResourceSliceMaxAttributesAndCapacitiesPerDevice
inline constexpr size_t kMaxTaintsPerDevice = 4;                    // DeviceTaintsMaxLength: 4 to 1.34, 16 from 1.35
inline constexpr size_t kMaxQualifiedNameDomainLength = 63;         // DeviceMaxDomainLength
inline constexpr size_t kMaxQualifiedNameIdLength = 32;             // DeviceMaxIDLength
inline constexpr size_t kMaxSliceDevices = 128;                     // ResourceSliceMaxDevices
// ResourceSliceMaxDevicesWithTaintsOrConsumesCounters (1.35+; 128 before, so 64 holds everywhere).
inline constexpr size_t kMaxSliceDevicesWithTaintsOrCounters = 64;
inline constexpr size_t kMaxCounterSetsPerSlice = 8;                // ResourceSliceMaxCounterSets (1.35)
inline constexpr size_t kMaxSharedCountersPerSlice = 32;            // ResourceSliceMaxSharedCounters (1.34, summed)
inline constexpr size_t kMaxCounterConsumptionsPerDevice = 2;       // ResourceSliceMaxDeviceCounterConsumptionsPerDevice
inline constexpr size_t kMaxCountersPerDevice = 32;                 // ResourceSliceMaxCountersPerDevice

// kgpu's own extras, in the order they are given up when a device has more attributes and
// capacities than the API allows: the MIG slice counts (the profile says them), the parent's index
// and minor (parentUUID says which GPU), the NVLink island, the full GPU's index and minor, and last
// NVIDIA's pre-v25.12 pcieBusID (resource.kubernetes.io/pciBusID carries the same value). NVIDIA's
// current attributes and capacities are never given up: claims written for its driver select them.
inline constexpr std::string_view kDroppableExtras[] = {
    "computeInstanceSlices", "gpuInstanceSlices", "parentMinor", "parentIndex", "kgpu.io/nvlinkIsland",
    "index",                 "minor",             "pcieBusID"};

// Leaves out kgpu's extras (above) until `device` is within kMaxAttributesAndCapacitiesPerDevice, and
// keeps its first kMaxTaintsPerDevice taints. Returns a note for each thing left out; empty when the
// device was within the limits. A device still over the limit afterwards (attribute_count) must not
// be published: the API server would refuse its whole slice.
std::vector<std::string> fit_device_to_api_limits(DraDevice& device);
size_t attribute_and_capacity_count(const DraDevice& device);

// Every limit `slice` (a ResourceSlice object as kgpu writes it, v1 or v1beta1 shape) breaks, each
// naming the device and the limit; empty when it keeps them all. The tests hold every fleet's slices
// (and `kgpu devices -o dra`'s output) to it; the builder keeps the limits with fit_device_to_api_limits.
std::vector<std::string> slice_limit_violations(const nlohmann::json& slice);

}  // namespace kgpu::dra
