#include "cli/dynamic_mig_facts.h"

#include "nvml/dynamic_mig_facts.h"
#include "nvml/mig_instances.h"
#include "nvml/nvml_library.h"

namespace kgpu::cli {

dra::DynamicMigSelection DynamicMigFacts::select(const Config& config, const Inventory& inventory,
                                                 const std::shared_ptr<NvmlLibrary>& nvml,
                                                 const std::set<std::string>& kgpu_created) {
  const auto& entries = config.dra.mig_dynamic;
  if (entries.empty()) return {};
  std::map<std::string, dra::DynamicMigProbe> probes;
  std::string unavailable;  // why NVML cannot be asked at all
  if (!nvml) {
    unavailable = "libnvidia-ml.so.1 is not loaded";
  } else if (bound_to_ != nvml) {
    auto bound = MigInstances::bind(nvml);
    if (bound) {
      mig_ = *bound;
      bound_to_ = nvml;
    } else {
      unavailable = bound.error().message;
    }
  }
  bool initialised = false;
  for (const Gpu& g : inventory.gpus) {
    if (g.vendor != Vendor::Nvidia || !g.mig_capable || !dra::dynamic_mig_named(entries, g)) continue;
    if (auto known = known_.find(g.uuid); known != known_.end()) {
      probes[g.uuid] = known->second;
      continue;
    }
    dra::DynamicMigProbe probe;
    if (!unavailable.empty()) {
      probe.problem = unavailable;
    } else if (!initialised && !(initialised = static_cast<bool>(nvml->init()))) {
      unavailable = probe.problem = "nvmlInit failed";
    } else if (auto handle = nvml->device_by_uuid(g.uuid); !handle) {
      probe.problem = handle.error().message;
    } else if (auto profiles = read_dynamic_mig_profiles(*nvml, *mig_, *handle, g.memory_bytes); !profiles) {
      probe.problem = profiles.error().message;
    } else {
      probe.profiles = std::move(*profiles);
      known_[g.uuid] = probe;
    }
    probes[g.uuid] = std::move(probe);
  }
  if (initialised) nvml->shutdown();
  return dra::select_dynamic_mig(inventory, entries, probes, kgpu_created);
}

}  // namespace kgpu::cli
