#include "dra/api_share.h"

#include <algorithm>
#include <unordered_set>

#include "dra/model/device_names.h"

namespace kgpu::dra {
namespace {

bool all_digits(const std::string& s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; });
}

bool names(const std::string& entry, const Gpu& gpu) {
  return (all_digits(entry) && std::to_string(gpu.index) == entry) || gpu.uuid == entry;
}

// The GPU a published device belongs to: its parent's UUID for a MIG device, else its own.
std::string gpu_uuid_of(const DraDevice& d) {
  for (const char* name : {"parentUUID", "uuid"})
    if (const auto* v = d.attribute(name); v && std::holds_alternative<std::string>(*v))
      return std::get<std::string>(*v);
  return {};
}

bool listed(const DraConfig& dra, Vendor vendor) {
  const char* name = vendor == Vendor::Nvidia ? "nvidia" : vendor == Vendor::Amd ? "amd" : "intel";
  return vendor != Vendor::Generic && std::find(dra.vendors.begin(), dra.vendors.end(), name) != dra.vendors.end();
}

}  // namespace

DraShare dra_share(const Inventory& inventory, const DraConfig& dra) {
  DraShare share;
  share.owned.assign(inventory.gpus.size(), false);
  const auto& selection = dra.gpus;
  for (size_t i = 0; i < inventory.gpus.size(); ++i) {
    const Vendor vendor = inventory.gpus[i].vendor;
    share.owned[i] = listed(dra, vendor) && (vendor != Vendor::Nvidia || selection.empty());
  }
  if (!listed(dra, Vendor::Nvidia)) return share;  // the config check refuses gpus without nvidia
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

ApiOwners api_owners(const Inventory& inventory, const std::vector<bool>& configured,
                     const std::vector<GpuHold>& claim_holds, const std::vector<GpuHold>& pod_holds) {
  ApiOwners out{configured, {}};
  out.owned.resize(inventory.gpus.size(), false);
  auto first_hold = [](const std::vector<GpuHold>& holds, size_t gpu) -> const GpuHold* {
    for (const auto& h : holds)
      if (h.gpu == gpu) return &h;
    return nullptr;
  };
  for (size_t i = 0; i < inventory.gpus.size(); ++i) {
    const Gpu& g = inventory.gpus[i];
    const std::string name = "GPU " + std::to_string(g.index) + " (" + g.uuid + ")";
    const GpuHold* claim = first_hold(claim_holds, i);
    const GpuHold* pod = first_hold(pod_holds, i);
    const bool config_dra = out.owned[i];
    if (claim && pod) {
      out.overrides.push_back(name + " is held by both " + claim->holder + " and " + pod->holder +
                              " (handed out twice before this start); it stays with " +
                              (config_dra ? "DRA" : "the device-plugin API") + " as configured");
    } else if (claim && !config_dra) {
      out.owned[i] = true;
      out.overrides.push_back(name + " stays with DRA while " + claim->holder +
                              " holds it; the configuration gives it to the device-plugin API");
    } else if (pod && config_dra) {
      out.owned[i] = false;
      out.overrides.push_back(name + " stays with the device-plugin API while " + pod->holder +
                              " holds it; the configuration gives it to DRA");
    }
  }
  std::sort(out.overrides.begin(), out.overrides.end());
  return out;
}

std::optional<size_t> gpu_of_device(const Inventory& inventory, const std::string& name_or_uuid) {
  for (size_t i = 0; i < inventory.gpus.size(); ++i) {
    const Gpu& g = inventory.gpus[i];
    if (g.uuid == name_or_uuid || gpu_device_name(g) == name_or_uuid) return i;
    for (const auto& m : g.mig_devices)
      if (m.uuid == name_or_uuid || mig_device_name(g, m) == name_or_uuid) return i;
  }
  return std::nullopt;
}

std::vector<GpuHold> claim_holds(const Inventory& inventory, const std::vector<PreparedClaim>& claims) {
  std::vector<GpuHold> out;
  for (const auto& c : claims)
    for (const auto& d : c.devices) {
      if (d.admin_access) continue;
      // Entries of checkpoints that predate gpuUUID name the device only.
      if (auto gpu = gpu_of_device(inventory, d.gpu_uuid.empty() ? d.device : d.gpu_uuid))
        out.push_back({*gpu, "claim " + c.ref.ns + "/" + c.ref.name + " (" + c.ref.uid + ")"});
    }
  return out;
}

std::vector<GpuHold> pod_holds(const Inventory& inventory, const ResourcePlan& plan,
                               const std::vector<podresources::ContainerDevices>& pods) {
  std::vector<GpuHold> out;
  for (const auto& c : pods)
    for (const auto& id : c.device_ids) {
      std::optional<size_t> gpu;
      for (const auto& r : plan.resources)
        if (r.name == c.resource)
          if (const AdvertisedDevice* d = r.find(id)) gpu = d->gpu;
      // A replica ID of an earlier sharing config ("GPU-x::3"): the UUID before "::".
      if (!gpu) gpu = gpu_of_device(inventory, id.substr(0, id.find("::")));
      if (gpu) out.push_back({*gpu, "pod " + c.pod() + " (" + c.resource + " " + id + ")"});
    }
  return out;
}

DriverNames driver_names(const DraConfig& dra) { return {dra.driver, dra.amd_driver, dra.intel_driver}; }

std::vector<std::string> served_drivers(const DraConfig& dra) {
  std::vector<std::string> out;
  for (Vendor v : {Vendor::Nvidia, Vendor::Amd, Vendor::Intel})
    if (listed(dra, v))
      out.push_back(v == Vendor::Nvidia ? dra.driver : v == Vendor::Amd ? dra.amd_driver : dra.intel_driver);
  return out;
}

std::vector<DriverPool> served_pools(std::vector<DriverPool> pools, const Inventory& inventory, const DraConfig& dra,
                                     const std::vector<bool>& owned) {
  const auto served = served_drivers(dra);
  std::erase_if(pools,
                [&](const DriverPool& p) { return std::find(served.begin(), served.end(), p.driver) == served.end(); });
  std::unordered_set<std::string> owned_uuids;
  for (size_t i = 0; i < inventory.gpus.size() && i < owned.size(); ++i)
    if (owned[i]) owned_uuids.insert(inventory.gpus[i].uuid);
  for (auto& pool : pools) {
    std::erase_if(pool.devices, [&](const DraDevice& d) { return !owned_uuids.contains(gpu_uuid_of(d)); });
    // A dynamic MIG GPU's counter set goes with its devices.
    std::erase_if(pool.counter_sets, [&](const CounterSet& set) {
      return std::none_of(pool.devices.begin(), pool.devices.end(), [&](const DraDevice& d) {
        return std::any_of(d.consumes_counters.begin(), d.consumes_counters.end(),
                           [&](const CounterConsumption& c) { return c.counter_set == set.name; });
      });
    });
  }
  return pools;
}

std::vector<std::string> hide_devices_held_elsewhere(std::vector<DriverPool>& pools,
                                                     const std::vector<PreparedClaim>& claims) {
  std::vector<std::string> hidden;
  for (auto& pool : pools)
    std::erase_if(pool.devices, [&](const DraDevice& d) {
      const std::string gpu = gpu_uuid_of(d);
      const bool full_gpu = d.attribute("parentUUID") == nullptr;
      for (const auto& c : claims)
        for (const auto& held : c.devices) {
          if (held.admin_access || held.gpu_uuid.empty() || held.gpu_uuid != gpu || held.device == d.name) continue;
          if (!held.whole_gpu && !full_gpu) continue;  // two MIG devices: distinct slices
          hidden.push_back(d.name + " is not published: claim " + c.ref.ns + "/" + c.ref.name + " (" + c.ref.uid +
                           ") holds its GPU as " + held.device);
          return true;
        }
      return false;
    });
  return hidden;
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
