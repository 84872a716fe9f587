// Dynamic MIG publication (issue 42) of an 8 x H100 80GB node with every placement of every profile
// (19 devices and one 15-counter set per GPU): layout + ResourceSlice objects, both counter layouts.
// Target (issue 42): < 50 ms.
//   bench_dra_dynamic_mig_slices
#include <benchmark/benchmark.h>

#include "dra/publish/dynamic_mig_slices.h"

namespace {

using namespace kgpu::dra;

constexpr uint64_t kMiB = 1024ULL * 1024;

DynamicMigGpuFacts h100(unsigned minor) {
  DynamicMigGpuFacts g;
  g.minor = minor;
  g.uuid = "GPU-00000000-0000-4000-8000-00000000000" + std::to_string(minor);
  g.profiles = {{"1g.10gb", 19, 16, 1, 1, 0, 1, 0, 9984 * kMiB, 1, {0, 1, 2, 3, 4, 5, 6}},
                {"1g.20gb", 15, 26, 1, 1, 0, 1, 0, 20096 * kMiB, 2, {0, 2, 4, 6}},
                {"2g.20gb", 14, 32, 2, 2, 0, 2, 0, 20096 * kMiB, 2, {0, 2, 4}},
                {"3g.40gb", 9, 60, 3, 3, 0, 3, 0, 40448 * kMiB, 4, {0, 4}},
                {"4g.40gb", 5, 64, 4, 4, 0, 4, 0, 40448 * kMiB, 4, {0}},
                {"7g.80gb", 0, 132, 8, 7, 0, 7, 1, 81152 * kMiB, 8, {0}}};
  return g;
}

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
