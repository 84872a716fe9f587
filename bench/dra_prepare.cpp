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
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <atomic>
#include <cstdio>
#include <filesystem>
#include <thread>
#include <vector>

#include "cdi/spec_writer.h"
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

BENCHMARK(BM_DraPrepareClaimPure)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DraUnprepareMany)->Arg(1)->Arg(8)->Iterations(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DraPrepareFirstCall)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_DraPrepareRepeatCall)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
