#include "telemetry/targets.h"

#include <cctype>

namespace kgpu::telemetry {

std::string gpu_instance_profile(const std::string& mig_profile) {
  // "<n>c.<gi profile>": a leading number, 'c', '.'.
  size_t i = 0;
  while (i < mig_profile.size() && std::isdigit(static_cast<unsigned char>(mig_profile[i]))) ++i;
  if (i > 0 && i + 1 < mig_profile.size() && mig_profile[i] == 'c' && mig_profile[i + 1] == '.')
    return mig_profile.substr(i + 2);
  return mig_profile;
}

std::vector<Target> targets_from_inventory(const Inventory& inventory) {
  std::vector<Target> out;
  for (const Gpu& gpu : inventory.gpus) {
    if (gpu.vendor != Vendor::Nvidia) continue;
    // Built whole, not member by member: GCC 12 -O2 takes the assignments for reads of an
    // uninitialised string (-Wmaybe-uninitialized).
    const Target whole{static_cast<unsigned>(gpu.index), gpu.uuid, gpu.pci_bus_id, gpu.product, std::nullopt, "",
                       gpu.uuid, {gpu.uuid, std::to_string(gpu.index)}};
    out.push_back(whole);
    if (!gpu.mig_enabled) continue;
    // One entity per GPU instance; its compute instances (MIG devices) all map to it.
    const size_t first_instance = out.size();
    for (const MigDevice& mig : gpu.mig_devices) {
      Target* gi = nullptr;
      for (size_t i = first_instance; i < out.size(); ++i) {
        if (out[i].gpu_instance_id == static_cast<unsigned>(mig.gpu_instance_id)) gi = &out[i];
      }
      if (gi == nullptr) {
        Target t = whole;
        t.gpu_instance_id = static_cast<unsigned>(mig.gpu_instance_id);
        t.gpu_instance_profile = gpu_instance_profile(mig.profile);
        t.read_uuid = mig.uuid;
        t.device_ids.clear();
        out.push_back(std::move(t));
        gi = &out.back();
      }
      gi->device_ids.push_back(mig.uuid);
      gi->device_ids.push_back(std::to_string(gpu.index) + ":" + std::to_string(mig.index));
    }
  }
  return out;
}

}  // namespace kgpu::telemetry
