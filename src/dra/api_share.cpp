#include "dra/api_share.h"

#include <algorithm>

namespace kgpu::dra {
namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool names(const std::string& entry, const Gpu& gpu) {
  return (all_digits(entry) && std::to_string(gpu.index) == entry) || gpu.uuid == entry;
}

}  // namespace

DraShare dra_share(const Inventory& inventory, const std::vector<std::string>& selection) {
  DraShare share;
  share.owned.assign(inventory.gpus.size(), false);
  for (size_t i = 0; i < inventory.gpus.size(); ++i)
    share.owned[i] = selection.empty() && inventory.gpus[i].vendor == Vendor::Nvidia;
  for (const auto& entry : selection) {
    bool matched = false;
    for (size_t i = 0; i < inventory.gpus.size(); ++i) {
      const Gpu& gpu = inventory.gpus[i];
      if (gpu.vendor != Vendor::Nvidia || !names(entry, gpu)) continue;
      share.owned[i] = matched = true;
    }
    if (!matched) share.unmatched.push_back(entry);
  }
  return share;
}

ResourcePlan without_owned(ResourcePlan plan, const std::vector<bool>& owned) {
  auto is_owned = [&](const AdvertisedDevice& d) { return d.gpu < owned.size() && owned[d.gpu]; };
  std::erase_if(plan.resources, [&](Resource& r) {
    if (r.devices.empty()) return false;
    std::erase_if(r.devices, is_owned);
    return r.devices.empty();
  });
  return plan;
}

}  // namespace kgpu::dra
