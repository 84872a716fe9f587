// DRA NodePrepareResources for a claim of 8 full GPUs on an 8-GPU A100 node, excluding the API-server
// round trip (the fetch returns the claim text from memory). Target (issue 15): < 1 ms.
//   bench_dra_prepare                       (files under $TMPDIR, default /tmp)
//   TMPDIR=/dev/shm bench_dra_prepare       (both files on tmpfs, as /var/run/cdi is)
// BM_DraPrepareClaimPure: parse the ResourceClaim + prepare_claim + render the CDI spec text.
// BM_DraPrepareFirstCall: ClaimStore::prepare of a new claim: the above, plus writing the CDI spec
//   and the checkpoint atomically (each with fsync of the file and its folder). The unprepare that
//   makes the next iteration a first call again is not timed.
// BM_DraPrepareRepeatCall: the kubelet asking again for a prepared claim (after its restart).
// BM_DraUnprepareMany/T: 1,000 claims unprepared by T threads (see there).
// The claim spec carries driver files like a real node's (60 libraries, 5 binaries, 2 firmware).
// BM_DraSocketManyClaims (issue 40, item 3): the whole path, through the kubelet's socket. The real
//   kgpu binary (this build's; KGPU_BENCH_BINARY overrides) runs DRA only on the fake NVML (a DGX
//   A100 fixture node) against the fake API server, and the DRA kubelet simulator prepares 1,000
//   admin-access claims in one NodePrepareResources call, then unprepares all of them in ONE
//   NodeUnprepareResources call. The time is that unprepare call's; counters: the prepare call
//   (prepare_s), kgpu's VmRSS before any claim (rss_start_MiB), after one claim prepared and
//   unprepared (rss_warm_MiB), with the 1,000 prepared (rss_prepared_MiB) and once all are
//   unprepared (rss_end_MiB); anon_*: RssAnon (heap, stacks), without the code pages. Targets: unprepare < 1 s, rss_prepared <= 30 MiB, rss_end within
//   2 MiB of rss_start. The CDI specs and the checkpoint are under $TMPDIR (fsyncs: on a disk,
//   each prepare's spec and checkpoint writes dominate prepare_s).
// Only this one: bench_dra_prepare --benchmark_filter=Socket
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include "cdi/spec_writer.h"
#include "child_process.h"
#include "proc_sample.h"
#include "sim/dra_kubelet_sim.h"
#include "support/fake_api_server.h"
#include "dra/claims/claim_store.h"
#include "dra/model/publication.h"
#include "unit/dra/synthetic_node.h"

namespace {

using namespace kgpu;
using nlohmann::json;

constexpr const char* kUid = "0b6f2c4e-1111-4000-8000-00000000c1a1";

std::shared_ptr<dra::NodeDevices> node() {
  auto n = std::make_shared<dra::NodeDevices>();
  n->inventory = testing::a100_node(8, 0);
  dra::SliceOptions o;
  o.node_name = "node-1";
  n->pool = dra::build_publication(n->inventory, o)->pools.at(0);
  DriverFiles files;
  files.library_dir = "/usr/lib/x86_64-linux-gnu";
  for (int i = 0; i < 60; ++i)
    files.libraries.push_back(files.library_dir + "/libnvidia-part" + std::to_string(i) + ".so.550.54.15");
  files.binaries = {"/usr/bin/nvidia-smi", "/usr/bin/nvidia-debugdump", "/usr/bin/nvidia-persistenced",
                    "/usr/bin/nvidia-cuda-mps-control", "/usr/bin/nvidia-cuda-mps-server"};
  files.firmware = {"/lib/firmware/nvidia/550.54.15/gsp_ga10x.bin", "/lib/firmware/nvidia/550.54.15/gsp_tu10x.bin"};
  files.control_nodes = {"/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools"};
  n->driver_files = files;
  return n;
}

std::string claim_text(const dra::NodeDevices& n) {
  json results = json::array();
  for (const auto& d : n.pool.devices)
    results.push_back({{"request", "gpus"}, {"driver", "gpu.nvidia.com"}, {"pool", "node-1"}, {"device", d.name}});
  return json{{"apiVersion", "resource.k8s.io/v1"},
              {"kind", "ResourceClaim"},
              {"metadata", {{"name", "eight"}, {"namespace", "team-a"}, {"uid", kUid}}},
              {"spec", {{"devices", {{"requests", {{{"name", "gpus"}, {"exactly", {{"deviceClassName", "gpu.nvidia.com"}, {"count", 8}}}}}}}}}},
              {"status", {{"allocation", {{"devices", {{"results", results}, {"config", json::array()}}}}}}}}
      .dump();
}

void BM_DraPrepareClaimPure(benchmark::State& state) {
  const auto n = node();
  const std::string text = claim_text(*n);
  for (auto _ : state) {
    auto claim = dra::parse_resource_claim(text);
    auto prepared = dra::prepare_claim(*claim, {n->config, n->inventory, n->pool, &*n->driver_files});
    if (!prepared || prepared->claim.devices.size() != 8) state.SkipWithError("prepare failed");
    benchmark::DoNotOptimize(cdi_spec_text(prepared->cdi_spec));
  }
}

struct Scratch {
  std::filesystem::path path;
  Scratch() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/kgpu-bench-dra-XXXXXX";
    path = ::mkdtemp(pattern.data());
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

std::unique_ptr<dra::ClaimStore> store(const Scratch& dir, const std::shared_ptr<dra::NodeDevices>& n) {
  const std::string text = claim_text(*n);
  auto s = std::make_unique<dra::ClaimStore>(
      dra::ClaimStoreOptions{"gpu.nvidia.com", (dir.path / "plugin/claims.json").string(), (dir.path / "cdi").string(), "boot"},
      [text](const std::string&, const std::string&) { return Result<std::string>(text); });
  s->set_devices(n);
  return s;
}

void BM_DraPrepareFirstCall(benchmark::State& state) {
  Scratch dir;
  auto s = store(dir, node());
  const dra::ClaimRef ref{kUid, "team-a", "eight"};
  for (auto _ : state) {
    auto r = s->prepare(ref);
    if (!r) state.SkipWithError(r.error().message.c_str());
    state.PauseTiming();
    if (!s->unprepare(kUid)) state.SkipWithError("unprepare failed");
    state.ResumeTiming();
  }
}

void BM_DraPrepareRepeatCall(benchmark::State& state) {
  Scratch dir;
  auto s = store(dir, node());
  const dra::ClaimRef ref{kUid, "team-a", "eight"};
  if (!s->prepare(ref)) state.SkipWithError("first prepare failed");
  for (auto _ : state) benchmark::DoNotOptimize(s->prepare(ref));
}

// Issue 28, item 6: 1,000 prepared claims unprepared in one kubelet call, the claims run by
// state.range(0) threads side by side (1: the old single worker; 8: kgpu's claim-call pool). Each
// unprepare removes a spec and rewrites the checkpoint of the claims still prepared (fsync'd).
// The claims are admin-access ones, so 1,000 of them fit on 8 GPUs.
void BM_DraUnprepareMany(benchmark::State& state) {
  constexpr int kClaims = 1000;
  const int threads = static_cast<int>(state.range(0));
  const auto n = node();
  auto uid_of = [](int i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "0b6f2c4e-2222-4000-8000-%012d", i);
    return std::string(buf);
  };
  for (auto _ : state) {
    state.PauseTiming();
    Scratch dir;
    dra::ClaimStore s(
        dra::ClaimStoreOptions{"gpu.nvidia.com", (dir.path / "plugin/claims.json").string(), (dir.path / "cdi").string(), "boot"},
        [&](const std::string&, const std::string& name) {
          const int i = std::stoi(name.substr(1));
          json result = {{"request", "gpus"}, {"driver", "gpu.nvidia.com"}, {"pool", "node-1"},
                         {"device", n->pool.devices[static_cast<size_t>(i) % n->pool.devices.size()].name},
                         {"adminAccess", true}};
          return Result<std::string>(
              json{{"apiVersion", "resource.k8s.io/v1"},
                   {"kind", "ResourceClaim"},
                   {"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", uid_of(i)}}},
                   {"spec", {{"devices", {{"requests", json::array()}}}}},
                   {"status", {{"allocation", {{"devices", {{"results", {result}}, {"config", json::array()}}}}}}}}
                  .dump());
        });
    s.set_devices(n);
    for (int i = 0; i < kClaims; ++i)
      if (!s.prepare({uid_of(i), "team-a", "c" + std::to_string(i)})) state.SkipWithError("prepare failed");
    state.ResumeTiming();
    std::vector<std::thread> workers;
    std::atomic<int> next{0};
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&] {
        for (int i; (i = next++) < kClaims;)
          if (!s.unprepare(uid_of(i))) state.SkipWithError("unprepare failed");
      });
    for (auto& w : workers) w.join();
  }
}

// See the header comment.
void BM_DraSocketManyClaims(benchmark::State& state) {
  using namespace std::chrono_literals;
  constexpr int kClaims = 1000;
  namespace fs = std::filesystem;
  auto rss_mib = [](pid_t pid) { return static_cast<double>(bench::sample_process(pid).rss_kib) / 1024.0; };
  // RssAnon: the heap and stacks, without the pages of kgpu's own code that new paths fault in.
  auto anon_mib = [](pid_t pid) {
    return static_cast<double>(bench::detail::status_fields("/proc/" + std::to_string(pid) + "/status")["RssAnon:"]) /
           1024.0;
  };
  for (auto _ : state) {
    Scratch dir;
    const std::string tmp = dir.path.string(), root = tmp + "/kubelet", cdi = tmp + "/cdi", log = tmp + "/kgpu.log";
    for (const auto& d : {root + "/device-plugins", root + "/plugins_registry", cdi}) fs::create_directories(d);
    const std::string nvml_dir = KGPU_FAKE_NVML_DIR, fleet = std::string(KGPU_FIXTURES_DIR) + "/fleets/dgx-a100.yaml";
    bench::Child gen({nvml_dir + "/kgpu-fake-nvml-fixture", fleet, tmp + "/node"}, {}, tmp + "/fixture.log");
    if (!gen.started() || gen.wait_exit(30s) != 0) return state.SkipWithError("the fixture generator failed");
    test::FakeApiServer api("node-1", {});
    if (!api.bound()) return state.SkipWithError("the fake API server cannot listen");
    const char* binary = std::getenv("KGPU_BENCH_BINARY");
    bench::Child kgpu({binary && *binary ? binary : KGPU_BINARY, "plugin", "--kubelet-socket",
                       root + "/device-plugins/kubelet.sock", "--log-level", "warn", "--sysfs-root", tmp + "/node/sys",
                       "--proc-root", tmp + "/node/proc", "--dev-root", tmp + "/node", "--dra", "--cdi-spec-dir", cdi},
                      {"LD_LIBRARY_PATH=" + nvml_dir, "KGPU_FAKE_NVML_FLEET=" + fleet, "NODE_NAME=node-1",
                       "KGPU_KUBE_API=" + api.url(), "KGPU_DEVICE_PLUGIN=false"},
                      log);
    if (!kgpu.started()) return state.SkipWithError("cannot start kgpu");
    sim::DraKubeletSim kubelet(root, 34);
    if (!kubelet.wait_for_plugin(30s)) return state.SkipWithError("kgpu's DRA plugin did not register");
    std::vector<std::string> devices;
    if (!api.wait_slices(
            [&](const auto& slices) {
              devices.clear();
              for (const auto& [name, slice] : slices)
                for (const auto& d : slice["spec"].value("devices", json::array())) devices.push_back(d.value("name", ""));
              return devices.size() >= 8;
            },
            30s))
      return state.SkipWithError("no slices published");
    std::vector<sim::DraClaim> claims;
    for (int i = 0; i < kClaims; ++i) {
      char uid[64];
      std::snprintf(uid, sizeof uid, "0b6f2c4e-3333-4000-8000-%012d", i);
      const std::string name = "c" + std::to_string(i);
      json result = {{"request", "gpu"}, {"driver", "gpu.nvidia.com"}, {"pool", "node-1"},
                     {"device", devices[static_cast<size_t>(i) % devices.size()]}, {"adminAccess", true}};
      api.put_resource_claim(
          json{{"apiVersion", "resource.k8s.io/v1"},
               {"kind", "ResourceClaim"},
               {"metadata", {{"name", name}, {"namespace", "team-a"}, {"uid", uid}}},
               {"spec", {{"devices", {{"requests", json::array()}}}}},
               {"status", {{"allocation", {{"devices", {{"results", {result}}, {"config", json::array()}}}}}}}});
      claims.push_back({"team-a", name, uid});
    }
    const double rss_start = rss_mib(kgpu.pid());
    // One claim prepared and unprepared first: what the first claim sets up once (the API client,
    // resource.k8s.io's versions, the claim workers' thread stacks that glibc keeps for reuse) is
    // not growth. rss_warm_MiB is kgpu's RSS after it.
    {
      auto warm = kubelet.prepare("gpu.nvidia.com", {claims[0]}, 30s);
      if (!warm || warm->size() != 1 || !warm->begin()->second.error.empty())
        return state.SkipWithError("the warm-up prepare failed");
      if (!kubelet.unprepare("gpu.nvidia.com", {claims[0]}, 30s)) return state.SkipWithError("the warm-up unprepare failed");
    }
    const double rss_warm = rss_mib(kgpu.pid()), anon_warm = anon_mib(kgpu.pid());
    auto begun = std::chrono::steady_clock::now();
    auto prepared = kubelet.prepare("gpu.nvidia.com", claims, 120s);
    const double prepare_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
    if (!prepared || prepared->size() != claims.size()) return state.SkipWithError("NodePrepareResources failed");
    for (const auto& [uid, p] : *prepared)
      if (!p.error.empty()) return state.SkipWithError(("prepare: " + p.error).c_str());
    const double rss_prepared = rss_mib(kgpu.pid());
    begun = std::chrono::steady_clock::now();
    auto unprepared = kubelet.unprepare("gpu.nvidia.com", claims, 120s);
    const double unprepare_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - begun).count();
    if (!unprepared || unprepared->size() != claims.size()) return state.SkipWithError("NodeUnprepareResources failed");
    for (const auto& [uid, e] : *unprepared)
      if (!e.empty()) return state.SkipWithError(("unprepare: " + e).c_str());
    // What the daemon keeps once its claim-call threads have ended (they end as soon as idle).
    std::this_thread::sleep_for(200ms);
    const double rss_end = rss_mib(kgpu.pid()), anon_end = anon_mib(kgpu.pid());
    state.SetIterationTime(unprepare_s);
    state.counters["prepare_s"] = prepare_s;
    state.counters["rss_start_MiB"] = rss_start;
    state.counters["rss_warm_MiB"] = rss_warm;
    state.counters["anon_warm_MiB"] = anon_warm;
    state.counters["anon_end_MiB"] = anon_end;
    state.counters["rss_prepared_MiB"] = rss_prepared;
    state.counters["rss_end_MiB"] = rss_end;
  }
}

BENCHMARK(BM_DraSocketManyClaims)->Iterations(1)->UseManualTime()->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DraPrepareClaimPure)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DraUnprepareMany)->Arg(1)->Arg(8)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DraPrepareFirstCall)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DraPrepareRepeatCall)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
