#include "dra/model/dynamic_mig_select.h"

#include <algorithm>

namespace kgpu::dra {
namespace {

std::string label(const Gpu& g) { return "GPU " + std::to_string(g.index) + " (" + g.uuid + ")"; }

// Hopper (compute capability 9.0) and later switch MIG mode without a reset; NVIDIA's driver asks
// for arch >= HOPPER. The capability decides when the architecture name is one kgpu does not know.
bool mig_mode_switches_live(const Gpu& g) {
  if (g.architecture == "ampere") return false;
  return g.cc_major >= 9;
}

}  // namespace

bool dynamic_mig_named(const std::vector<std::string>& entries, const Gpu& gpu) {
  for (const auto& e : entries)
    if (e == "all" || e == gpu.uuid || e == std::to_string(gpu.index)) return true;
  return false;
}

DynamicMigSelection select_dynamic_mig(const Inventory& inventory, const std::vector<std::string>& entries,
                                       const std::map<std::string, DynamicMigProbe>& probes,
                                       const std::set<std::string>& kgpu_created) {
  DynamicMigSelection out;
  if (entries.empty()) return out;
  const std::string key = "kgpu.dra.mig.dynamic: ";
  auto not_dynamic = [&](const Gpu& g, const std::string& why) {
    out.warnings.push_back(key + label(g) + " is not published for dynamic MIG: " + why + "; published as without it");
  };
  for (const auto& entry : entries) {
    if (entry == "all") continue;
    const bool matched = std::any_of(inventory.gpus.begin(), inventory.gpus.end(), [&](const Gpu& g) {
      return g.vendor == Vendor::Nvidia && (g.uuid == entry || std::to_string(g.index) == entry);
    });
    if (!matched) out.warnings.push_back(key + "entry \"" + entry + "\" names no NVIDIA GPU of this node");
  }
  for (const Gpu& g : inventory.gpus) {
    if (g.vendor != Vendor::Nvidia || !dynamic_mig_named(entries, g)) continue;
    if (!g.mig_capable) {
      not_dynamic(g, "it is not MIG-capable");
      continue;
    }
    const bool live = mig_mode_switches_live(g);
    if (!live && !g.mig_enabled) {
      not_dynamic(g, "MIG mode is off, and on this architecture (" + (g.architecture.empty() ? "before Hopper" : g.architecture) +
                         ") switching it needs a GPU reset; enable MIG mode (nvidia-smi -i " + std::to_string(g.index) +
                         " -mig 1, then a reset) to offer its placements");
      continue;
    }
    if (g.minor < 0) {
      not_dynamic(g, "its device minor is unknown (placement names carry it)");
      continue;
    }
    // Named up to three, counted beyond: a GPU of seven 1g instances makes a long log line.
    std::string foreign;
    size_t count = 0;
    for (const auto& m : g.mig_devices) {
      if (kgpu_created.contains(m.uuid)) continue;
      if (++count <= 3) foreign += (foreign.empty() ? "" : ", ") + m.uuid + " (" + m.profile + ")";
    }
    if (count > 3) foreign += " and " + std::to_string(count - 3) + " more";
    if (!foreign.empty()) {
      not_dynamic(g, "it holds MIG instances kgpu did not create (" + foreign +
                         "); kgpu neither destroys them nor places instances around them");
      continue;
    }
    auto probe = probes.find(g.uuid);
    if (probe == probes.end() || !probe->second.problem.empty()) {
      not_dynamic(g, "NVML did not say its MIG profiles (" +
                         (probe == probes.end() ? std::string("not asked") : probe->second.problem) + ")");
      continue;
    }
    DynamicMigGpuFacts facts;
    facts.minor = static_cast<unsigned>(g.minor);
    facts.uuid = g.uuid;
    facts.offer_full_gpu = live;
    for (const auto& p : probe->second.profiles)
      if (!p.placement_starts.empty() && p.placement_size > 0) facts.profiles.push_back(p);
    if (facts.profiles.empty()) {
      not_dynamic(g, "NVML reports no MIG profile with placements for it");
      continue;
    }
    out.gpus.push_back(std::move(facts));
  }
  return out;
}

std::vector<DynamicMigLayout> dynamic_mig_layouts(const DynamicMigSelection& selection) {
  std::vector<DynamicMigLayout> out;
  out.reserve(selection.gpus.size());
  for (const auto& g : selection.gpus) out.push_back(dynamic_mig_layout(g));
  return out;
}

}  // namespace kgpu::dra
