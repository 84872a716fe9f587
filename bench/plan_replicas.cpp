// plan() on a big shared node: 16 A100s × 48 time-slicing replicas = 768 advertised devices, and
// the size of the ListAndWatch message that carries them (the kubelet rejects messages > 4 MiB).
//   bench_plan_replicas [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include "deviceplugin/v1beta1/api.pb.h"
#include "plan/allocate.h"
#include "plan/plan.h"

namespace {

kgpu::Inventory node(int gpus) {
  kgpu::Inventory inv;
  for (int i = 0; i < gpus; ++i) {
    kgpu::Gpu g;
    g.index = i;
    g.uuid = "GPU-" + std::string(8, 'a') + "-bbbb-cccc-dddd-" + std::string(10, 'e') + (i < 10 ? "0" : "") +
             std::to_string(i);  // 40 characters, like a real UUID
    g.product = "NVIDIA A100-SXM4-80GB";
    g.memory_bytes = uint64_t{80} << 30;
    g.numa_node = i / 8;
    g.cc_major = 8;
    inv.gpus.push_back(g);
  }
  return inv;
}

kgpu::Config shared(int replicas) {
  kgpu::Config c;
  c.time_slicing.rename_by_default = true;
  kgpu::ReplicatedResource r;
  r.name = "nvidia.com/gpu";
  r.replicas = replicas;
  c.time_slicing.resources.push_back(r);
  return c;
}

v1beta1::ListAndWatchResponse list_and_watch(const kgpu::Resource& r) {
  v1beta1::ListAndWatchResponse msg;
  for (const auto& d : r.devices) {
    auto* dev = msg.add_devices();
    dev->set_id(d.id);
    dev->set_health(d.healthy ? "Healthy" : "Unhealthy");
    for (auto n : d.numa_nodes) dev->mutable_topology()->add_nodes()->set_id(n);
  }
  return msg;
}

void BM_Plan(benchmark::State& state) {
  const auto inv = node(static_cast<int>(state.range(0)));
  const auto config = shared(static_cast<int>(state.range(1)));
  size_t devices = 0;
  for (auto _ : state) {
    auto p = kgpu::plan(config, inv);
    devices = p.resources.front().devices.size();
    benchmark::DoNotOptimize(p);
  }
  state.counters["devices"] = static_cast<double>(devices);
}
BENCHMARK(BM_Plan)->Args({16, 48})->Args({8, 16})->Unit(benchmark::kMicrosecond);

void BM_ListAndWatchMessage(benchmark::State& state) {
  const auto inv = node(static_cast<int>(state.range(0)));
  const auto p = kgpu::plan(shared(static_cast<int>(state.range(1))), inv);
  size_t bytes = 0;
  for (auto _ : state) {
    auto msg = list_and_watch(p.resources.front());
    bytes = msg.ByteSizeLong();
    benchmark::DoNotOptimize(bytes);
  }
  state.counters["bytes"] = static_cast<double>(bytes);
  state.counters["share_of_4MiB_%"] = 100.0 * static_cast<double>(bytes) / (4 << 20);
}
BENCHMARK(BM_ListAndWatchMessage)->Args({16, 48})->Unit(benchmark::kMicrosecond);

void BM_AllocateOneReplica(benchmark::State& state) {
  const auto inv = node(16);
  const auto config = shared(48);
  const auto p = kgpu::plan(config, inv);
  const auto& r = p.resources.front();
  const std::vector<std::string> ids{r.devices.back().id};  // worst case for the linear ID lookup
  for (auto _ : state) {
    auto b = kgpu::backing_devices(inv, r, ids);
    benchmark::DoNotOptimize(b);
  }
}
BENCHMARK(BM_AllocateOneReplica)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
