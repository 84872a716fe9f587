#pragma once
// Synthetic NVIDIA nodes for DRA slice tests and the slice benchmark: n A100-40GB GPUs joined by an
// NVSwitch, the first `mig_gpus` of them in MIG mode with seven 1g.5gb devices each.
#include <cstdio>
#include <string>

#include "core/inventory.h"

namespace kgpu::testing {

inline Inventory a100_node(int n, int mig_gpus) {
  Inventory inv;
  inv.driver_version = "550.54.15";
  inv.cuda_driver_version = 12040;
  inv.topology.nvswitch = true;
  inv.topology.links.assign(n, std::vector<GpuLink>(n, GpuLink{12, PcieLevel::CrossSocket}));
  for (int i = 0; i < n; ++i) {
    Gpu g;
    g.index = i;
    g.minor = i;
    char uuid[64];
    std::snprintf(uuid, sizeof(uuid), "GPU-00000000-0000-4000-8000-%012d", i);
    g.uuid = uuid;
    g.product = "NVIDIA A100-SXM4-40GB";
    g.brand = "nvidia";
    g.architecture = "ampere";
    g.memory_bytes = uint64_t{40960} << 20;
    char bus[32];
    std::snprintf(bus, sizeof(bus), "00000000:%02X:00.0", i + 1);
    g.pci_bus_id = bus;
    g.cc_major = 8;
    g.mig_capable = true;
    g.mig_enabled = i < mig_gpus;
    if (g.mig_enabled)
      for (int m = 0; m < 7; ++m) {
        MigDevice d;
        d.uuid = "MIG-" + std::to_string(i) + "-" + std::to_string(m);
        d.index = m;
        d.gpu_instance_id = 7 + m;
        d.compute_instance_id = 0;
        d.profile = "1g.5gb";
        d.memory_bytes = uint64_t{4864} << 20;
        d.multiprocessors = 14;
        d.gpu_instance_slices = 1;
        d.compute_instance_slices = 1;
        d.copy_engines = 1;
        g.mig_devices.push_back(d);
      }
    inv.gpus.push_back(g);
  }
  return inv;
}

}  // namespace kgpu::testing
