#pragma once
// allocate(): the answer to one container's Allocate request for one resource of the current plan.
// Pure: validates the requested IDs, maps replicas back to the physical GPUs / MIG devices behind
// them (deduplicated, request order kept) and builds the container edits (vendor edits plus, for
// MPS, the pipe directory, shm and per-client limits).
//
// Errors are Error::invalid with a message naming the resource and the offending ID or limit:
// empty request, unknown ID, duplicate ID, more than one replica when failRequestsGreaterThanOne.
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

// The validation and mapping step of allocate() alone: the distinct devices behind `ids`, in
// request order. Exposed for callers that need the physical devices (metrics, CDI) without edits.
Result<std::vector<BackingDevice>> backing_devices(const Inventory& inventory, const Resource& resource,
                                                   const std::vector<std::string>& ids);

}  // namespace kgpu
