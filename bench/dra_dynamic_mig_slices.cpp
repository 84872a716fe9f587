// Dynamic MIG publication (issue 42) of an 8 x H100 80GB node with every placement of every profile
// (19 devices and one 15-counter set per GPU): layout + ResourceSlice objects, both counter layouts.
// Target (issue 42): < 50 ms.
//   bench_dra_dynamic_mig_slices
#include <benchmark/benchmark.h>

#include "dra/publish/dynamic_mig_slices.h"
#include "unit/dra/h100_mig_facts.h"

namespace {

using namespace kgpu::dra;


DynamicMigGpuFacts h100(unsigned minor) { return kgpu::dra::testing::h100_mig_facts(minor); }

void publish(benchmark::State& state, CounterLayout layout) {
  std::vector<DynamicMigGpuFacts> facts;
  for (unsigned i = 0; i < 8; ++i) facts.push_back(h100(i));
  DynamicMigSliceOptions options;
  options.node_name = "node-1";
  options.layout = layout;
  for (auto _ : state) {
    std::vector<DynamicMigLayout> layouts;
    for (const auto& f : facts) layouts.push_back(dynamic_mig_layout(f));
    auto slices = dynamic_mig_slices(layouts, options);
    std::string body;
    for (const auto& s : slices) body += s.dump();
    benchmark::DoNotOptimize(body);
  }
}

void BM_DynamicMigSlicesCombined(benchmark::State& state) { publish(state, CounterLayout::Combined); }
void BM_DynamicMigSlicesSplit(benchmark::State& state) { publish(state, CounterLayout::Split); }
BENCHMARK(BM_DynamicMigSlicesCombined)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DynamicMigSlicesSplit)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
