#pragma once
// An H100 80GB's MIG profiles as NVML reports them (the fake NVML's h100-80gb table; NVIDIA's MIG
// user guide), and an 8 x H100 node published for dynamic MIG, for the dynamic MIG tests and
// bench_dra_dynamic_mig_slices.
#include <cstdint>
#include <string>

#include "dra/model/dynamic_mig.h"
#include "dra/model/dynamic_mig_select.h"
#include "dra/model/publication.h"
#include "unit/dra/synthetic_node.h"

namespace kgpu::dra::testing {

inline DynamicMigGpuFacts h100_mig_facts(unsigned minor) {
  constexpr uint64_t kMiB = 1024ULL * 1024;
  DynamicMigGpuFacts g;
  g.minor = minor;
  g.uuid = "GPU-00000000-0000-4000-8000-00000000000" + std::to_string(minor);
  //          name       id  SMs  CE DEC ENC JPG OFA  MiB   size  starts
  g.profiles = {{"1g.10gb", 19, 16, 1, 1, 0, 1, 0, 9984 * kMiB, 1, {0, 1, 2, 3, 4, 5, 6}},
                {"1g.20gb", 15, 26, 1, 1, 0, 1, 0, 20096 * kMiB, 2, {0, 2, 4, 6}},
                {"2g.20gb", 14, 32, 2, 2, 0, 2, 0, 20096 * kMiB, 2, {0, 2, 4}},
                {"3g.40gb", 9, 60, 3, 3, 0, 3, 0, 40448 * kMiB, 4, {0, 4}},
                {"4g.40gb", 5, 64, 4, 4, 0, 4, 0, 40448 * kMiB, 4, {0}},
                {"7g.80gb", 0, 132, 8, 7, 0, 7, 1, 81152 * kMiB, 8, {0}}};
  return g;
}

// n H100 80GB (Hopper, MIG mode off) joined by an NVSwitch: the A100 node's shape with H100 facts.
inline Inventory h100_node(int n) {
  Inventory inv = kgpu::testing::a100_node(n, 0);
  for (auto& g : inv.gpus) {
    g.product = "NVIDIA H100 80GB HBM3";
    g.architecture = "hopper";
    g.cc_major = 9;
    g.cc_minor = 0;
    g.memory_bytes = uint64_t{81559} << 20;
    g.multiprocessors = 132;
  }
  return inv;
}

// What NVML answers for each GPU of `inv` (h100_mig_facts' profiles).
inline std::map<std::string, DynamicMigProbe> h100_probes(const Inventory& inv) {
  std::map<std::string, DynamicMigProbe> out;
  for (const auto& g : inv.gpus) out[g.uuid].profiles = h100_mig_facts(static_cast<unsigned>(g.minor)).profiles;
  return out;
}

// The slice options of `inv` with every GPU published for dynamic MIG (kgpu.dra.mig.dynamic: all).
inline SliceOptions dynamic_options(const Inventory& inv, CounterLayout layout = CounterLayout::Combined) {
  SliceOptions o;
  o.node_name = "node-a";
  o.counter_layout = layout;
  o.dynamic_mig = dynamic_mig_layouts(select_dynamic_mig(inv, {"all"}, h100_probes(inv), {}));
  return o;
}

}  // namespace kgpu::dra::testing
