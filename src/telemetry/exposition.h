#pragma once
// Pure rendering of one scrape into Prometheus text exposition under DCGM exporter's names:
// per field `# HELP` / `# TYPE`, then one sample per entity that has the reading, with the label
// names and order dcgm-exporter writes (gpu, UUID, pci_bus_id, device, modelName, GPU_I_PROFILE,
// GPU_I_ID, Hostname, then DCGM_FI_DRIVER_VERSION, container, err_code, err_msg, namespace, pod).
// Integers print as %d, DCGM's double fields (power) as %f. A field no entity has is left out.
#include <string>
#include <vector>

#include "telemetry/sample.h"

namespace kgpu::telemetry {

// `readings[i]` and `owners[i]` belong to `targets[i]` (owners may be shorter: no owner). An
// entity held by several containers (a shared GPU's replicas) gets one sample per owner, so each
// pod sees its device's series under its own labels.
void render_dcgm(const NodeLabels& node, const std::vector<Target>& targets, const std::vector<Reading>& readings,
                 const std::vector<std::vector<Owner>>& owners, std::string& out);

}  // namespace kgpu::telemetry
