#include "core/inventory.h"

#include <algorithm>

#include "core/resource_plan.h"

namespace kgpu {

const char* to_string(Vendor v) {
  switch (v) {
    case Vendor::Nvidia: return "nvidia";
    case Vendor::Amd: return "amd";
    case Vendor::Intel: return "intel";
    case Vendor::Generic: return "generic";
  }
  return "unknown";
}

const char* to_string(SharingKind s) {
  switch (s) {
    case SharingKind::None: return "none";
    case SharingKind::TimeSlicing: return "time-slicing";
    case SharingKind::Mps: return "mps";
  }
  return "unknown";
}

const Gpu* Inventory::find_by_uuid(const std::string& uuid) const {
  for (const auto& g : gpus)
    if (g.uuid == uuid) return &g;
  return nullptr;
}

Inventory merge(std::vector<Inventory> parts) {
  Inventory out;
  size_t total = 0;
  for (const auto& p : parts) total += p.gpus.size();
  out.topology.links.assign(total, std::vector<GpuLink>(total));
  size_t offset = 0;
  for (auto& p : parts) {
    if (out.driver_version.empty()) {
      out.driver_version = p.driver_version;
      out.cuda_driver_version = p.cuda_driver_version;
    }
    out.topology.nvswitch = out.topology.nvswitch || p.topology.nvswitch;
    for (size_t a = 0; a < p.topology.links.size(); ++a)
      for (size_t b = 0; b < p.topology.links[a].size(); ++b)
        out.topology.links[offset + a][offset + b] = p.topology.links[a][b];
    for (auto& g : p.gpus) out.gpus.push_back(std::move(g));
    for (auto& w : p.warnings) out.warnings.push_back(std::move(w));
    for (auto& n : p.control_nodes)
      if (std::find(out.control_nodes.begin(), out.control_nodes.end(), n) == out.control_nodes.end())
        out.control_nodes.push_back(std::move(n));
    offset += p.gpus.size();
  }
  if (total == 0) out.topology.links.clear();
  return out;
}

const AdvertisedDevice* Resource::find(const std::string& id) const {
  for (const auto& d : devices)
    if (d.id == id) return &d;
  return nullptr;
}

const Resource* ResourcePlan::find(const std::string& name) const {
  for (const auto& r : resources)
    if (r.name == name) return &r;
  return nullptr;
}

}  // namespace kgpu
