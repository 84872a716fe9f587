// One /metrics GPU-telemetry scrape against the simulated NVML: the NVML read alone (NvmlReader)
// and the whole scrape (read + PodResources attribution + DCGM exposition), on 8 GPUs (dgx-a100)
// and 16 GPUs (hgx-16). Counters: NVML calls per scrape, exposition bytes. The fake NVML answers a
// call in well under a microsecond, so this measures kgpu's own cost; a real driver adds its ioctl
// time per call (calls x latency is the figure to compare with the 5 ms budget).
//   bench_telemetry_scrape
#include <benchmark/benchmark.h>

#include "nvml/discovery.h"
#include "telemetry/collector.h"
#include "telemetry/nvml_reader.h"
#include "telemetry/targets.h"
#include "unit/nvml/fake_fleet.h"

namespace {

using namespace kgpu;

const char* fleet_for(int64_t gpus) { return gpus == 16 ? "hgx-16.yaml" : "dgx-a100.yaml"; }

void BM_NvmlRead(benchmark::State& state) {
  kgpu::testing::FakeNode node(kgpu::testing::fleet_path(fleet_for(state.range(0))));
  if (!node.ready()) return state.SkipWithError(node.problem().c_str());
  auto inv = discover_nvidia(node.nvml(), node.options());
  if (!inv) return state.SkipWithError(inv.error().message.c_str());
  telemetry::NvmlReader reader(node.shared());
  reader.set_targets(telemetry::targets_from_inventory(*inv));
  std::vector<telemetry::Reading> readings;
  reader.read(readings);  // resolves handles once
  size_t calls = 0;
  for (auto _ : state) calls = reader.read(readings);
  state.counters["nvml_calls"] = static_cast<double>(calls);
}
BENCHMARK(BM_NvmlRead)->Arg(8)->Arg(16)->ArgName("gpus")->Unit(benchmark::kMicrosecond);

void BM_Scrape(benchmark::State& state) {
  kgpu::testing::FakeNode node(kgpu::testing::fleet_path(fleet_for(state.range(0))));
  if (!node.ready()) return state.SkipWithError(node.problem().c_str());
  auto inv = discover_nvidia(node.nvml(), node.options());
  if (!inv) return state.SkipWithError(inv.error().message.c_str());
  // Every GPU held by one pod, as on a busy node.
  std::vector<telemetry::ContainerDevices> pods;
  for (const auto& g : inv->gpus)
    pods.push_back({"ml", "train-" + std::to_string(g.index), "main", "nvidia.com/gpu", {g.uuid}});
  telemetry::CollectorOptions options;
  options.hostname = "node-1";
  options.pods = [&pods] { return Result<std::vector<telemetry::ContainerDevices>>(pods); };
  options.xids = [](const std::string&) -> std::optional<uint64_t> { return std::nullopt; };
  telemetry::Collector collector(std::make_unique<telemetry::NvmlReader>(node.shared()), options);
  collector.set_inventory(*inv);
  std::string out;
  collector.append(out);
  for (auto _ : state) {
    out.clear();
    collector.append(out);
    benchmark::DoNotOptimize(out.data());
  }
  state.counters["nvml_calls"] = static_cast<double>(collector.last_calls());
  state.counters["bytes"] = static_cast<double>(out.size());
}
BENCHMARK(BM_Scrape)->Arg(8)->Arg(16)->ArgName("gpus")->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
