#pragma once
// Hand-built node shapes for allocation tests and benchmarks: DGX-A100-like, HGX-H100-like,
// 4 x L4 in PCIe pairs, 2 x T4 across sockets, and seeded random topologies.
#include <cstdint>
#include <functional>
#include <random>
#include <string>

#include "core/inventory.h"
#include "core/resource_plan.h"

namespace kgpu::testing {

inline Inventory make_inventory(size_t n, const std::function<GpuLink(size_t, size_t)>& link,
                                const std::function<std::optional<int>(size_t)>& numa, bool nvswitch = false) {
  Inventory inv;
  inv.driver_version = "550.54.15";
  inv.cuda_driver_version = 12040;
  for (size_t i = 0; i < n; ++i) {
    Gpu g;
    g.index = static_cast<int>(i);
    g.uuid = "GPU-" + std::to_string(i);
    g.product = "NVIDIA Test GPU";
    g.numa_node = numa(i);
    inv.gpus.push_back(g);
  }
  inv.topology.links.assign(n, std::vector<GpuLink>(n));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < n; ++j)
      if (i != j) inv.topology.links[i][j] = link(std::min(i, j), std::max(i, j));
  inv.topology.nvswitch = nvswitch;
  return inv;
}

// 8 GPUs on an NVSwitch (12 lanes each), PCIe switches shared by pairs, two sockets.
inline Inventory dgx_a100() {
  return make_inventory(
      8,
      [](size_t a, size_t b) {
        PcieLevel p = a / 4 != b / 4 ? PcieLevel::CrossSocket
                      : a / 2 == b / 2 ? PcieLevel::SingleSwitch
                                       : PcieLevel::MultipleSwitches;
        return GpuLink{12, p};
      },
      [](size_t i) { return std::optional<int>(static_cast<int>(i / 4)); }, true);
}

// 8 GPUs on an NVSwitch (18 lanes each), one PCIe switch per GPU, two sockets.
inline Inventory hgx_h100() {
  return make_inventory(
      8, [](size_t a, size_t b) { return GpuLink{18, a / 4 == b / 4 ? PcieLevel::SameNuma : PcieLevel::CrossSocket}; },
      [](size_t i) { return std::optional<int>(static_cast<int>(i / 4)); }, true);
}

// 4 x L4, no NVLink, a PCIe switch per pair, pairs on different sockets.
inline Inventory l4x4_pairs() {
  return make_inventory(
      4,
      [](size_t a, size_t b) { return GpuLink{0, a / 2 == b / 2 ? PcieLevel::SingleSwitch : PcieLevel::CrossSocket}; },
      [](size_t i) { return std::optional<int>(static_cast<int>(i / 2)); });
}

// 2 x T4 on different sockets.
inline Inventory t4x2() {
  return make_inventory(
      2, [](size_t, size_t) { return GpuLink{0, PcieLevel::CrossSocket}; },
      [](size_t i) { return std::optional<int>(static_cast<int>(i)); });
}

// Random but realistic-ish: sparse NVLink (0-4 lanes), any PCIe level, NUMA sometimes unknown.
inline Inventory random_topology(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::vector<std::vector<GpuLink>> links(n, std::vector<GpuLink>(n));
  const PcieLevel levels[] = {PcieLevel::SameBoard, PcieLevel::SingleSwitch, PcieLevel::MultipleSwitches,
                              PcieLevel::HostBridge, PcieLevel::SameNuma, PcieLevel::CrossSocket,
                              PcieLevel::Unknown};
  for (size_t a = 0; a < n; ++a)
    for (size_t b = a + 1; b < n; ++b) {
      GpuLink l;
      l.nvlinks = rng() % 3 == 0 ? static_cast<int>(rng() % 5) : 0;
      l.pcie = levels[rng() % 7];
      links[a][b] = l;
    }
  std::vector<std::optional<int>> numa(n);
  for (auto& x : numa)
    if (rng() % 5 != 0) x = static_cast<int>(rng() % 2);
  return make_inventory(
      n, [&](size_t a, size_t b) { return links[a][b]; }, [&](size_t i) { return numa[i]; });
}

// One whole-GPU ID per GPU: "GPU-<i>".
inline Resource whole_gpus(const Inventory& inv) {
  Resource r;
  r.name = "nvidia.com/gpu";
  for (size_t i = 0; i < inv.gpus.size(); ++i) {
    AdvertisedDevice d;
    d.id = inv.gpus[i].uuid;
    d.gpu = i;
    r.devices.push_back(d);
  }
  return r;
}

// `replicas` IDs per GPU: "GPU-<i>::<r>".
inline Resource replicated(const Inventory& inv, int replicas) {
  Resource r;
  r.name = "nvidia.com/gpu";
  r.sharing = SharingKind::TimeSlicing;
  r.replicas = replicas;
  for (size_t i = 0; i < inv.gpus.size(); ++i)
    for (int k = 0; k < replicas; ++k) {
      AdvertisedDevice d;
      d.id = inv.gpus[i].uuid + "::" + std::to_string(k);
      d.gpu = i;
      d.replica = k;
      r.devices.push_back(d);
    }
  return r;
}

// `per_gpu` MIG devices per GPU: "MIG-<i>-<j>".
inline Resource mig_devices(const Inventory& inv, int per_gpu) {
  Resource r;
  r.name = "nvidia.com/mig-1g.10gb";
  for (size_t i = 0; i < inv.gpus.size(); ++i)
    for (int k = 0; k < per_gpu; ++k) {
      AdvertisedDevice d;
      d.id = "MIG-" + std::to_string(i) + "-" + std::to_string(k);
      d.gpu = i;
      d.mig = static_cast<size_t>(k);
      r.devices.push_back(d);
    }
  return r;
}

inline std::vector<std::string> ids_of_mask(const Resource& r, uint64_t mask) {
  std::vector<std::string> out;
  for (size_t i = 0; i < r.devices.size(); ++i)
    if (mask >> i & 1) out.push_back(r.devices[i].id);
  return out;
}

}  // namespace kgpu::testing
