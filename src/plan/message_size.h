#pragma once
// The size of a resource's ListAndWatch message, computed by arithmetic instead of by building it,
// so that a plan that would not fit the kubelet's gRPC limit is refused before millions of device
// IDs exist (issue 13: `replicas: 1000000000` advertised 8.4 M devices and used 5 GB; from about
// 8,800 replicas on 8 GPUs the kubelet silently saw zero devices). Pure; O(devices) per call.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "core/resource_plan.h"

namespace kgpu {

// The kubelet's gRPC client keeps grpc-go's default limit for a received message: 4 MiB.
inline constexpr size_t kKubeletMaxMessageBytes = size_t{4} << 20;

// Bytes of one `devices` entry of v1beta1.ListAndWatchResponse for an ID of `id_length` bytes and
// these NUMA nodes, with the longer health value ("Unhealthy"), so health changes never push a plan
// over the limit.
size_t device_entry_bytes(size_t id_length, const std::vector<int64_t>& numa_nodes);

// Bytes of the serialised ListAndWatchResponse for `resource` (worst-case health).
size_t list_and_watch_bytes(const Resource& resource);

// Bytes of the entries for `replicas` replicas "<id>::0" .. "<id>::<replicas-1>" of `device`.
size_t replicated_entries_bytes(const AdvertisedDevice& device, int replicas);

}  // namespace kgpu
