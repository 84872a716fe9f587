#pragma once
// allocate(): the answer to one container's Allocate request for one resource of the current plan.
// Pure: validates the requested IDs, maps replicas back to the physical GPUs / MIG devices behind
// them (deduplicated, request order kept) and builds the container edits (vendor edits plus, for
// MPS, the pipe directory, shm and per-client limits).
//
// An ID repeated in one request is allocated once, as NVIDIA's plugin does since v0.18 (the kubelet
// should never repeat one, but refusing the container for it helps nobody); repeated_ids() names
// them for the caller's log.
//
// Errors are Error::invalid with a message naming the resource and the offending ID or limit:
// empty request, unknown ID, more than one replica when failRequestsGreaterThanOne (counted over
// the request as sent, as NVIDIA's plugin counts it).
#include <functional>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/container_edits.h"
#include "core/inventory.h"
#include "core/resource_plan.h"
#include "core/result.h"
#include "plan/device_edits.h"

namespace kgpu {

Result<ContainerEdits> allocate(const Config& config, const Inventory& inventory, const Resource& resource,
                                const std::vector<std::string>& ids);

// Does a host path exist right now? Injected so that planning stays free of I/O; the gRPC Allocate
// handler passes a stat.
using PresenceCheck = std::function<bool(const std::string& host_path)>;

// Drops the DeviceSpecs marked only_if_present whose host path `present` denies, and clears the
// mark on the others. Calls `present` once per marked spec only.
void resolve_optional_devices(ContainerEdits& edits, const PresenceCheck& present);

// allocate() followed by resolve_optional_devices(): the response the kubelet gets.
Result<ContainerEdits> allocate(const Config& config, const Inventory& inventory, const Resource& resource,
                                const std::vector<std::string>& ids, const PresenceCheck& present);

// The IDs that occur more than once in `ids`, each once, in order of first repetition.
std::vector<std::string> repeated_ids(const std::vector<std::string>& ids);

// The validation and mapping step of allocate() alone: the distinct devices behind `ids`, in
// request order. Exposed for callers that need the physical devices (metrics, CDI) without edits.
Result<std::vector<BackingDevice>> backing_devices(const Inventory& inventory, const Resource& resource,
                                                   const std::vector<std::string>& ids);

}  // namespace kgpu
