// GetPreferredAllocation policy cost: every request size on 8 GPUs (DGX-A100-like) and 16 GPUs (two
// NVSwitch boards of 8, and a random sparse topology), with 0-3 must-include devices, all GPUs
// available. Each call is timed on its own so the p50/p99 counters are per request (microseconds).
// The TopologyScorer is built once, as the daemon does; "percall" rows build it per call.
//   bench_alloc_preferred --benchmark_counters_tabular=true
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>

#include "alloc/preferred.h"
#include "unit/alloc/topologies.h"

namespace {

using namespace kgpu;

// 16 GPUs: two 8-GPU NVSwitch boards joined only by PCIe across sockets (HGX-2-like halves).
Inventory sixteen_two_boards() {
  return testing::make_inventory(
      16,
      [](size_t a, size_t b) {
        if (a / 8 != b / 8) return GpuLink{0, PcieLevel::CrossSocket};
        return GpuLink{12, a / 2 == b / 2 ? PcieLevel::SingleSwitch : PcieLevel::MultipleSwitches};
      },
      [](size_t i) { return std::optional<int>(static_cast<int>(i / 8)); }, false);
}

const Inventory& inventory_for(int64_t kind) {
  static const Inventory dgx = testing::dgx_a100();
  static const Inventory boards = sixteen_two_boards();
  static const Inventory random16 = testing::random_topology(16, 4242);
  return kind == 0 ? dgx : kind == 1 ? boards : random16;
}

void record_percentiles(benchmark::State& state, std::vector<double>& us) {
  if (us.empty()) return;
  std::sort(us.begin(), us.end());
  state.counters["p50_us"] = us[us.size() / 2];
  state.counters["p99_us"] = us[std::min(us.size() - 1, us.size() * 99 / 100)];
  state.counters["max_us"] = us.back();
}

// Args: topology kind (0: dgx 8, 1: two boards 16, 2: random 16), size, must-include count,
// scorer per call (0/1).
void BM_Preferred(benchmark::State& state) {
  const Inventory& inv = inventory_for(state.range(0));
  const int size = static_cast<int>(state.range(1));
  const auto must_count = static_cast<size_t>(state.range(2));
  const bool per_call = state.range(3) != 0;
  const Config config;
  const Resource resource = testing::whole_gpus(inv);
  std::vector<std::string> available;
  for (const auto& d : resource.devices) available.push_back(d.id);
  // Must-include devices spread over the node (0, 5, 10 on 16 GPUs; 0, 3, 6 on 8).
  std::vector<std::string> must;
  for (size_t m = 0; m < must_count; ++m) must.push_back(available[(m * (inv.gpus.size() / 3 + 1)) % available.size()]);
  const TopologyScorer scorer(inv);
  std::vector<double> us;
  us.reserve(1 << 16);
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    auto out = per_call ? preferred_allocation(config, inv, resource, available, must, size)
                        : preferred_allocation(config, scorer, resource, available, must, size);
    const auto stop = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(out);
    if (!out.ok()) state.SkipWithError(out.error().message.c_str());
    if (us.size() < (1u << 16)) us.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
  }
  record_percentiles(state, us);
}

void all_sizes(benchmark::internal::Benchmark* b) {
  for (int64_t kind : {0, 1, 2}) {
    const int64_t n = kind == 0 ? 8 : 16;
    for (int64_t must = 0; must <= 3; ++must)
      for (int64_t size = std::max<int64_t>(1, must); size <= n; ++size) b->Args({kind, size, must, 0});
  }
  for (int64_t kind : {0, 1}) b->Args({kind, 4, 0, 1});  // scorer built per call, for comparison
}

BENCHMARK(BM_Preferred)->Apply(all_sizes)->ArgNames({"topo", "size", "must", "percall"})->MinTime(0.05);

// Replica path: 8 GPUs x 16 replicas, distributed; half the replicas taken.
void BM_PreferredReplicas(benchmark::State& state) {
  const Inventory inv = testing::dgx_a100();
  Config config;
  config.shared_devices_allocation_policy = state.range(1) ? SharedAllocationPolicy::Packed : SharedAllocationPolicy::Distributed;
  const Resource resource = testing::replicated(inv, 16);
  std::vector<std::string> available;
  for (size_t i = 0; i < resource.devices.size(); ++i)
    if (i % 3 != 0) available.push_back(resource.devices[i].id);
  const TopologyScorer scorer(inv);
  std::vector<double> us;
  for (auto _ : state) {
    const auto start = std::chrono::steady_clock::now();
    auto out = preferred_allocation(config, scorer, resource, available, {}, static_cast<int>(state.range(0)));
    const auto stop = std::chrono::steady_clock::now();
    benchmark::DoNotOptimize(out);
    if (us.size() < (1u << 16)) us.push_back(std::chrono::duration<double, std::micro>(stop - start).count());
  }
  record_percentiles(state, us);
}
BENCHMARK(BM_PreferredReplicas)->ArgsProduct({{1, 4, 8}, {0, 1}})->ArgNames({"size", "packed"})->MinTime(0.05);

}  // namespace

BENCHMARK_MAIN();
