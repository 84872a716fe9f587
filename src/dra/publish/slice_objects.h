#pragma once
// The resource.k8s.io ResourceSlice objects that carry a pool (model/publication.h) to the API
// server, in the API version and with the features the server keeps. Pure.
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "dra/model/dra_device.h"
#include "dra/model/publication.h"

namespace kgpu::dra {

// The resource.k8s.io API versions kgpu writes: v1 (1.34+) and v1beta1 (1.32, 1.33; attributes and
// capacity nested under devices[].basic).
enum class SliceApi { V1, V1beta1 };
const char* api_version(SliceApi api);  // "resource.k8s.io/v1"

// At most this many devices per ResourceSlice (ResourceSliceMaxDevices), and 64 when a device of
// the slice has taints (ResourceSliceMaxDevicesWithAdvancedFeatures).
inline constexpr size_t kMaxDevicesPerSlice = 128;
inline constexpr size_t kMaxTaintedDevicesPerSlice = 64;
size_t max_devices_per_slice(const DriverPool& pool);

// What the API server keeps of device taints (the publisher finds out from its answers): all of
// them; all but effect None (servers before it, which refuse the value); none (the field is
// stripped or refused: DRADeviceTaints off, or a Kubernetes without it).
enum class TaintSupport { Full, NoInformational, Off };
const char* to_string(TaintSupport support);
// `pool` as such a server can hold it: without the None taints, or, when Off, without the tainted
// devices (left out, as before taints) and with no taints at all. Pure.
DriverPool with_taint_support(DriverPool pool, TaintSupport support);

// Whether the API server keeps consumable capacity (allowMultipleAllocations and requestPolicy:
// Kubernetes' DRAConsumableCapacity); the publisher finds out from its answers. Where it does not,
// `pool` is published with its shared GPUs as ordinary exclusive devices (no allowMultipleAllocations,
// no request policies, no multiprocessors capacity on full GPUs). Pure.
DriverPool with_share_support(DriverPool pool, bool served);
bool has_shared_devices(const DriverPool& pool);

// NVIDIA's choice of counter layout by the API server's version: separate counter slices from 1.35
// on (1.35 refuses a slice holding counter sets and devices), combined before (1.34's allocator
// looks for a device's counter set in the device's own slice).
CounterLayout counter_layout_for(int server_major, int server_minor);

// How a pool is cut into slices: which of its counter sets (pool.counter_sets) and devices
// (pool.devices) each slice holds, by index. Devices without counters first, as many to a slice as
// the device limit allows (at least one slice, so an empty pool is still published); then the
// counter sets by `layout` (model/publication.h): Combined, each set in one slice with the devices
// consuming it; Split, the sets packed into slices of their own (within the counter-set and
// shared-counter limits) and their devices in others, one GPU's to a slice.
struct SlicePart {
  std::vector<size_t> counter_sets;
  std::vector<size_t> devices;
};
std::vector<SlicePart> slice_parts(const DriverPool& pool, CounterLayout layout);

// Where the API server does not keep shared counters (partitionable devices: Kubernetes'
// DRAPartitionableDevices off, or before 1.33), a pool that has them would let the scheduler hand
// out overlapping MIG placements: such a server gets each dynamic GPU as its full device only,
// without counters (no placement), and the claim stores must follow. Pure.
DriverPool with_counter_support(DriverPool pool, bool served);
bool has_counters(const DriverPool& pool);

// The ResourceSlice objects for one pool at one generation (slice_parts; options.counter_layout),
// named "<node>-<driver>-<n>", owned by the Node.
std::vector<nlohmann::json> resource_slices(const DriverPool& pool, const SliceOptions& options, int64_t generation,
                                            SliceApi api);

// The same slices as compact JSON text (byte for byte resource_slices(...)[k].dump()), written
// directly: the body the API-server writer sends, without building nlohmann trees on the health
// event path (about 20x faster for 112 devices).
std::vector<std::string> resource_slice_texts(const DriverPool& pool, const SliceOptions& options,
                                              int64_t generation, SliceApi api);

}  // namespace kgpu::dra
