// DRA slice rebuild after a health change on a 16-GPU node with every GPU in MIG mode (7 x 1g.5gb
// each, 112 devices): the work the daemon does per health event before writing to the API server.
// Target (issue 15): < 100 us.
//   bench_dra_slices
// BM_DraPoolsAfterHealthChange: build_publication + the "did anything change" comparison.
// BM_DraSliceTextAfterHealthChange: the same plus the v1 ResourceSlice request body (direct text).
// BM_DraJsonTreeAfterHealthChange: the same body through nlohmann trees, for comparison.
#include <benchmark/benchmark.h>

#include "dra/model/publication.h"
#include "dra/publish/slice_objects.h"
#include "unit/dra/synthetic_node.h"

namespace {

using namespace kgpu;

dra::SliceOptions options() {
  dra::SliceOptions o;
  o.node_name = "node-1";
  o.node_uid = "0f1e2d3c-0000-4000-8000-000000000001";
  return o;
}

enum class Render { None, Text, JsonTree };

void rebuild(benchmark::State& state, Render render) {
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
    for (const auto& pool : next->pools) {
      if (render == Render::Text) benchmark::DoNotOptimize(dra::resource_slice_texts(pool, opts, flip, dra::SliceApi::V1));
      if (render == Render::JsonTree)
        for (const auto& slice : dra::resource_slices(pool, opts, flip, dra::SliceApi::V1))
          benchmark::DoNotOptimize(slice.dump());
    }
    previous = std::move(next);
  }
}

void BM_DraPoolsAfterHealthChange(benchmark::State& state) { rebuild(state, Render::None); }
void BM_DraSliceTextAfterHealthChange(benchmark::State& state) { rebuild(state, Render::Text); }
void BM_DraJsonTreeAfterHealthChange(benchmark::State& state) { rebuild(state, Render::JsonTree); }
BENCHMARK(BM_DraPoolsAfterHealthChange)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DraSliceTextAfterHealthChange)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DraJsonTreeAfterHealthChange)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
