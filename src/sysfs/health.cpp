// Health on rescans for the sysfs backends: presence in a fresh discovery is the health signal.
#include <map>

#include "sysfs/backends.h"

namespace kgpu {

Inventory recheck_health(const Inventory& previous, const Inventory& rescanned) {
  std::map<std::string, const Gpu*> now;
  for (const auto& g : rescanned.gpus)
    if (g.vendor != Vendor::Nvidia) now[g.uuid] = &g;

  Inventory out = previous;
  out.warnings = rescanned.warnings;
  std::map<std::string, bool> seen;
  for (auto& g : out.gpus) {
    if (g.vendor == Vendor::Nvidia) continue;  // NVML health is the NVIDIA backend's
    auto it = now.find(g.uuid);
    if (it == now.end()) {
      std::string where = g.device_nodes.empty() ? g.uuid : g.device_nodes.back().path;
      g.health = {false, "sysfs node of " + g.uuid + " (" + where + ") disappeared"};
      continue;
    }
    seen[g.uuid] = true;
    g.health = it->second->health;
  }
  for (const auto& g : rescanned.gpus) {
    if (g.vendor == Vendor::Nvidia || seen.count(g.uuid)) continue;
    Gpu added = g;
    added.index = static_cast<int>(out.gpus.size());
    out.gpus.push_back(std::move(added));
    // Topology between sysfs devices is not modelled; keep the matrix square for merge() users.
    for (auto& row : out.topology.links) row.resize(out.gpus.size());
    if (!out.topology.links.empty()) out.topology.links.resize(out.gpus.size(), std::vector<GpuLink>(out.gpus.size()));
  }
  return out;
}

}  // namespace kgpu
