// node_labels cost on an 8-GPU node (full GPUs, time-sliced) and a 4-GPU mixed-MIG node: the
// daemon recomputes labels on every plan change, so this bounds that work.
//   bench_labels_node
#include <benchmark/benchmark.h>

#include "labels/labels.h"
#include "unit/alloc/topologies.h"

namespace {

using namespace kgpu;

Inventory eight_gpus(bool mig) {
  Inventory inv;
  inv.driver_version = "550.54.15";
  inv.cuda_driver_version = 12040;
  for (int i = 0; i < 8; ++i) {
    Gpu g;
    g.index = i;
    g.uuid = "GPU-" + std::to_string(i);
    g.product = "NVIDIA A100-SXM4-40GB";
    g.memory_bytes = uint64_t{40960} << 20;
    g.pci_bus_id = "00000000:0" + std::to_string(i) + ":00.0";
    g.cc_major = 8;
    g.mig_capable = true;
    g.mig_enabled = mig;
    if (mig)
      for (int m = 0; m < 3; ++m) {
        MigDevice d;
        d.profile = m == 0 ? "3g.20gb" : "1g.5gb";
        d.memory_bytes = uint64_t{4864} << 20;
        g.mig_devices.push_back(d);
      }
    inv.gpus.push_back(g);
  }
  return inv;
}

ResourcePlan plan_for(const Inventory& inv, int replicas) { return {{kgpu::testing::replicated(inv, replicas)}, {}}; }

void BM_NodeLabels(benchmark::State& state) {
  const bool mig = state.range(0) != 0;
  Config config;
  config.mig_strategy = mig ? MigStrategy::Mixed : MigStrategy::None;
  const Inventory inv = eight_gpus(mig);
  const ResourcePlan plan = plan_for(inv, mig ? 1 : 16);
  LabelContext ctx;
  ctx.machine_type = "DGX A100";
  ctx.timestamp = 1724632719;
  for (auto _ : state) benchmark::DoNotOptimize(node_labels(config, inv, plan, ctx));
}
BENCHMARK(BM_NodeLabels)->Arg(0)->Arg(1)->ArgName("mig");

}  // namespace

BENCHMARK_MAIN();
