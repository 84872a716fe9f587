// DRA slice rebuild after a health change on a 16-GPU node with every GPU in MIG mode (7 x 1g.5gb
// each, 112 devices): the work the daemon does per health event before writing to the API server.
// Target (issue 15): < 100 us.
//   bench_dra_slices
// BM_DraPoolsAfterHealthChange: build_publication + the "did anything change" comparison.
// BM_DraSlicesAfterHealthChange: the same plus rendering the v1 ResourceSlice JSON.
#include <benchmark/benchmark.h>

#include "dra/slice_builder.h"
#include "unit/dra/synthetic_node.h"

namespace {

using namespace kgpu;

dra::SliceOptions options() {
  dra::SliceOptions o;
  o.node_name = "node-1";
  o.node_uid = "0f1e2d3c-0000-4000-8000-000000000001";
  return o;
}

void rebuild(benchmark::State& state, bool render) {
  Inventory inv = testing::a100_node(16, 16);
  const auto opts = options();
  auto previous = dra::build_publication(inv, opts);
  int flip = 0;
  for (auto _ : state) {
    // Alternate one GPU between unhealthy and healthy so every iteration is a real change.
    auto& g = inv.gpus[static_cast<size_t>(flip++ % 16)];
    g.health = g.health.healthy ? HealthState{false, "XID 79"} : HealthState{};
    auto next = dra::build_publication(inv, opts);
    const bool changed = next->pools != previous->pools;
    benchmark::DoNotOptimize(changed);
    if (render)
      for (const auto& pool : next->pools)
        benchmark::DoNotOptimize(dra::resource_slices(pool, opts, flip, dra::SliceApi::V1));
    previous = std::move(next);
  }
}

void BM_DraPoolsAfterHealthChange(benchmark::State& state) { rebuild(state, false); }
void BM_DraSlicesAfterHealthChange(benchmark::State& state) { rebuild(state, true); }
BENCHMARK(BM_DraPoolsAfterHealthChange)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DraSlicesAfterHealthChange)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
