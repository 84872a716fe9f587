#include "plan/mig.h"

#include <map>
#include <tuple>

#include "plan/resource_names.h"

namespace kgpu::planner {

namespace {

struct NvidiaGpus {
  std::vector<size_t> full;  // MIG disabled
  std::vector<size_t> mig;   // MIG enabled, with at least one MIG device
  std::vector<size_t> empty_mig;  // MIG enabled but no MIG devices
};

NvidiaGpus classify(const Inventory& inventory) {
  NvidiaGpus out;
  for (size_t i = 0; i < inventory.gpus.size(); ++i) {
    const Gpu& g = inventory.gpus[i];
    if (g.vendor != Vendor::Nvidia) continue;
    if (!g.mig_enabled) out.full.push_back(i);
    else if (g.mig_devices.empty()) out.empty_mig.push_back(i);
    else out.mig.push_back(i);
  }
  return out;
}

void add_full_gpus(const Config& config, const Inventory& inventory, const std::vector<size_t>& gpus,
                   ResourceMap& resources) {
  for (size_t i : gpus)
    add_device(resources, nvidia_gpu_resource_name(config, inventory.gpus[i]), Vendor::Nvidia,
               gpu_device(inventory, i));
}

void report_empty_mig(const Inventory& inventory, const std::vector<size_t>& gpus, const char* strategy,
                      std::vector<std::string>& problems) {
  for (size_t i : gpus)
    problems.push_back(describe_gpu(inventory.gpus[i]) + " has MIG enabled but no MIG devices; with mig-strategy=" +
                       strategy + " nothing on it is advertised until MIG devices are created.");
}

// `single` on a non-uniform node. NVIDIA's plugin exits (and crash-loops) here; we keep serving
// what is safe, because a pod that asks for `nvidia.com/gpu` must get one well-defined kind of device:
//  - MIG and non-MIG GPUs mixed: serve only the whole GPUs. A pod then gets at least what it could
//    expect from `nvidia.com/gpu`, never a slice where a whole GPU may be assumed;
//  - several MIG profiles: serve only the most common profile (ties: more memory, then name order),
//    which keeps the devices uniform and withholds as few as possible.
void add_single(const Config& config, const Inventory& inventory, const NvidiaGpus& gpus, ResourceMap& resources,
                std::vector<std::string>& problems) {
  report_empty_mig(inventory, gpus.empty_mig, "single", problems);
  if (gpus.mig.empty() && gpus.empty_mig.empty()) {  // no MIG at all: single behaves like none
    add_full_gpus(config, inventory, gpus.full, resources);
    return;
  }
  if (!gpus.full.empty()) {
    problems.push_back("mig-strategy=single needs every GPU in the same MIG mode, but " +
                       std::to_string(gpus.mig.size() + gpus.empty_mig.size()) + " GPU(s) have MIG enabled and " +
                       std::to_string(gpus.full.size()) +
                       " do not; serving only the GPUs without MIG and withholding every MIG device.");
    add_full_gpus(config, inventory, gpus.full, resources);
    return;
  }
  // Every GPU has MIG enabled: count profiles.
  std::map<std::string, std::pair<size_t, uint64_t>> profiles;  // profile -> (count, memory)
  for (size_t i : gpus.mig)
    for (const auto& m : inventory.gpus[i].mig_devices) {
      auto& p = profiles[m.profile];
      ++p.first;
      p.second = std::max(p.second, m.memory_bytes);
    }
  std::string chosen;
  if (!profiles.empty()) {
    auto best = profiles.begin();
    for (auto it = profiles.begin(); it != profiles.end(); ++it)
      if (std::tie(it->second.first, it->second.second) > std::tie(best->second.first, best->second.second)) best = it;
    chosen = best->first;
  }
  if (profiles.size() > 1) {
    std::string list;
    for (const auto& [name, stat] : profiles)
      list += (list.empty() ? "" : ", ") + name + " ×" + std::to_string(stat.first);
    problems.push_back("mig-strategy=single needs one MIG profile on the node, found " + list + "; serving only the " +
                       chosen + " devices and withholding the others.");
  }
  for (size_t i : gpus.mig) {
    const Gpu& g = inventory.gpus[i];
    for (size_t j = 0; j < g.mig_devices.size(); ++j)
      if (g.mig_devices[j].profile == chosen)
        add_device(resources, mig_resource_name(config, chosen), Vendor::Nvidia, mig_device(inventory, i, j));
  }
}

void add_mixed(const Config& config, const Inventory& inventory, const NvidiaGpus& gpus, ResourceMap& resources,
               std::vector<std::string>& problems) {
  report_empty_mig(inventory, gpus.empty_mig, "mixed", problems);
  add_full_gpus(config, inventory, gpus.full, resources);
  for (size_t i : gpus.mig) {
    const Gpu& g = inventory.gpus[i];
    for (size_t j = 0; j < g.mig_devices.size(); ++j) {
      const auto& m = g.mig_devices[j];
      if (m.profile.empty()) {
        problems.push_back("MIG device " + std::to_string(g.index) + ":" + std::to_string(m.index) + " on " +
                           describe_gpu(g) + " has no profile name; it is not advertised.");
        continue;
      }
      add_device(resources, mig_resource_name(config, m.profile), Vendor::Nvidia, mig_device(inventory, i, j));
    }
  }
}

}  // namespace

void add_nvidia_resources(const Config& config, const Inventory& inventory, ResourceMap& resources,
                          std::vector<std::string>& problems) {
  const NvidiaGpus gpus = classify(inventory);
  switch (config.mig_strategy) {
    case MigStrategy::None: {
      // Whole GPUs only, MIG-enabled or not, as NVIDIA's plugin does.
      std::vector<size_t> all;
      for (size_t i = 0; i < inventory.gpus.size(); ++i)
        if (inventory.gpus[i].vendor == Vendor::Nvidia) all.push_back(i);
      add_full_gpus(config, inventory, all, resources);
      return;
    }
    case MigStrategy::Single: add_single(config, inventory, gpus, resources, problems); return;
    case MigStrategy::Mixed: add_mixed(config, inventory, gpus, resources, problems); return;
  }
}

}  // namespace kgpu::planner
