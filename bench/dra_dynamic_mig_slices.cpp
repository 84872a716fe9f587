// Dynamic MIG publication (issue 42) of an 8 x H100 80GB node with every placement of every profile
// (19 devices and one 15-counter set per GPU), timed along the daemon's path on every plan: which
// GPUs are dynamic (select_dynamic_mig, NVML's answers given), their layouts, build_publication,
// and the ResourceSlice texts the publisher writes, in both counter layouts. NVML's own time
// (asked once per GPU, then remembered) is not in it. Target (issue 42): < 50 ms.
//   bench_dra_dynamic_mig_slices
#include <benchmark/benchmark.h>

#include "dra/model/dynamic_mig_select.h"
#include "dra/model/publication.h"
#include "dra/publish/slice_objects.h"
#include "unit/dra/h100_mig_facts.h"

namespace {

using namespace kgpu::dra;

void publish(benchmark::State& state, CounterLayout layout) {
  const kgpu::Inventory inventory = testing::h100_node(8);
  const auto probes = testing::h100_probes(inventory);
  SliceOptions options;
  options.node_name = "node-1";
  options.node_uid = "0f1e2d3c-0000-4000-8000-000000000001";
  options.counter_layout = layout;
  size_t bytes = 0;
  for (auto _ : state) {
    options.dynamic_mig = dynamic_mig_layouts(select_dynamic_mig(inventory, {"all"}, probes, {}));
    auto publication = build_publication(inventory, options);
    auto texts = resource_slice_texts(publication->pools.front(), options, 1, SliceApi::V1);
    bytes = 0;
    for (const auto& t : texts) bytes += t.size();
    benchmark::DoNotOptimize(texts);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
}

void BM_DynamicMigPublicationCombined(benchmark::State& state) { publish(state, CounterLayout::Combined); }
void BM_DynamicMigPublicationSplit(benchmark::State& state) { publish(state, CounterLayout::Split); }
BENCHMARK(BM_DynamicMigPublicationCombined)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DynamicMigPublicationSplit)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
