#pragma once
// Per-pod attribution (pure): which containers hold each telemetry entity, from what the kubelet's
// PodResources API List says each container was given. Device IDs are matched as the plugin hands
// them out: GPU uuid or index, a replica "<id>::<n>" as its GPU, a MIG device (uuid or "i:j") as
// its GPU instance. IDs that match no entity (other resources, other plugins) are ignored.
#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "telemetry/sample.h"

namespace kgpu::telemetry {

// One container's devices of one resource (the shape of PodResources' ContainerDevices).
struct ContainerDevices {
  std::string pod_namespace;
  std::string pod_name;
  std::string container;
  std::string resource;
  std::vector<std::string> device_ids;
};

// Filled by the composition root (a PodResources List call); called once per scrape, from the
// scraping thread. An error leaves the scrape without pod labels.
using AssignmentSource = std::function<Result<std::vector<ContainerDevices>>()>;

// owners[i]: the containers holding targets[i], sorted, each once.
std::vector<std::vector<Owner>> attribute(const std::vector<Target>& targets,
                                          const std::vector<ContainerDevices>& assignments);

}  // namespace kgpu::telemetry
