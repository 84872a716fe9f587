// Parsing a sharing entry whose `devices:` list is long (issue 13: de-duplicating 40k entries took
// 2.8 s per reload while it was quadratic). Half the entries repeat the other half.
//   bench_config_devices_list [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include "config/loader.h"

namespace {

std::string config_with_devices(int distinct) {
  std::string list;
  for (int round = 0; round < 2; ++round)
    for (int i = 0; i < distinct; ++i) list += (list.empty() ? "" : ", ") + std::to_string(i);
  return "version: v1\nsharing: {timeSlicing: {resources: [{name: gpu, replicas: 2, devices: [" + list + "]}]}}\n";
}

void BM_ParseDevicesList(benchmark::State& state) {
  const std::string text = config_with_devices(static_cast<int>(state.range(0)) / 2);
  for (auto _ : state) {
    auto loaded = kgpu::parse_config_text(text, "bench.yaml", false);
    benchmark::DoNotOptimize(loaded);
  }
  state.counters["entries"] = static_cast<double>(state.range(0));
}
BENCHMARK(BM_ParseDevicesList)->Arg(4000)->Arg(40000)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
