#pragma once
// Validation of a GetPreferredAllocation request and the mapping from IDs to what backs them.
// Internal to src/alloc.
#include <string>
#include <vector>

#include "core/resource_plan.h"
#include "core/result.h"

namespace kgpu::alloc {

struct RequestDevice {
  const AdvertisedDevice* device = nullptr;
  bool must = false;
};

struct Request {
  std::vector<RequestDevice> available;     // distinct, in the kubelet's order
  std::vector<const AdvertisedDevice*> must;  // in the kubelet's order
  size_t size = 0;
  // True when every ID is a whole GPU of its own (no replicas, no MIG): the topology search
  // applies to the IDs directly.
  bool whole_gpus = true;
};

Result<Request> validate_request(const Resource& resource, const std::vector<std::string>& available,
                                 const std::vector<std::string>& must_include, int size);

}  // namespace kgpu::alloc
