#pragma once
// Hand-built inventories for planner tests: A100-SXM4-40GB GPUs with MIG layouts, plain GPUs and
// other vendors. Only the fields the planner reads are filled.
#include <string>
#include <vector>

#include "config/config.h"
#include "core/inventory.h"

namespace kgpu::test {

inline constexpr uint64_t kGiB = uint64_t{1} << 30;

inline Gpu a100(int index, int numa = 0) {
  Gpu g;
  g.vendor = Vendor::Nvidia;
  g.index = index;
  g.uuid = "GPU-a100-000" + std::to_string(index);
  g.product = "NVIDIA A100-SXM4-40GB";
  g.memory_bytes = 40 * kGiB;
  g.pci_bus_id = "00000000:0" + std::to_string(index) + ":00.0";
  g.minor = index;
  g.numa_node = numa;
  g.cc_major = 8;
  g.cc_minor = 0;
  g.mig_capable = true;
  return g;
}

inline MigDevice mig(int gpu_index, int j, const std::string& profile, uint64_t memory_gib) {
  MigDevice m;
  m.uuid = "MIG-" + std::to_string(gpu_index) + "-" + std::to_string(j) + "-" + profile;
  m.index = j;
  m.gpu_instance_id = j + 1;
  m.compute_instance_id = 0;
  m.profile = profile;
  m.memory_bytes = memory_gib * kGiB;
  return m;
}

// An A100 with MIG on and the given profiles (memory from the profile's "<n>gb").
inline Gpu a100_mig(int index, const std::vector<std::string>& profiles, int numa = 0) {
  Gpu g = a100(index, numa);
  g.mig_enabled = true;
  for (size_t j = 0; j < profiles.size(); ++j) {
    const auto& p = profiles[j];
    const auto dot = p.rfind('.');
    const auto gb = p.find("gb", dot);
    g.mig_devices.push_back(mig(index, static_cast<int>(j), p, std::stoull(p.substr(dot + 1, gb - dot - 1))));
  }
  return g;
}

inline Inventory inventory_of(std::vector<Gpu> gpus) {
  Inventory inv;
  inv.driver_version = "550.54.15";
  inv.gpus = std::move(gpus);
  return inv;
}

inline ReplicatedResource replicated(std::string name, int replicas, DeviceSelector devices = {},
                                     std::string rename = {}) {
  ReplicatedResource r;
  r.name = std::move(name);
  r.rename = std::move(rename);
  r.replicas = replicas;
  r.devices = std::move(devices);
  return r;
}

inline DeviceSelector select_list(std::vector<std::string> items) {
  DeviceSelector s;
  s.value = std::move(items);
  return s;
}

inline DeviceSelector select_count(int n) {
  DeviceSelector s;
  s.value = n;
  return s;
}

inline std::vector<std::string> ids_of(const Resource& r) {
  std::vector<std::string> out;
  for (const auto& d : r.devices) out.push_back(d.id);
  return out;
}

inline std::vector<std::string> names_of(const ResourcePlan& p) {
  std::vector<std::string> out;
  for (const auto& r : p.resources) out.push_back(r.name);
  return out;
}

}  // namespace kgpu::test
