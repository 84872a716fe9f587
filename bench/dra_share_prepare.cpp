// Issue 31: NodePrepareResources of one GPU memory share, as kgpu's DRA driver runs it minus the
// API-server round trip: ClaimStore::prepare (parse, prepare_claim, the store's arithmetic over the
// GPU's shares, CDI spec and checkpoint written atomically) and ClaimSharing::apply (the GPU's MPS
// daemon asked of the real `kgpu mps-daemon`, with the fake nvidia-cuda-mps-control, and waited
// for). nvidia-smi (the compute mode) is a no-op runner here. Target: p50 < 5 ms with the daemon
// running.
//   BM_SharePrepareDaemonRunning: another share keeps the GPU's daemon up; the prepare rewrites its
//     request and finds it ready.
//   BM_SharePrepareDaemonStart: the first share of the GPU: the compute mode, the daemon's start by
//     the supervisor (its own tmpfs, the control daemon) and its readiness. The unprepare that
//     quits it again (and the wait until it is gone) is not timed.
// p50 / p90 in ms are counters; needs root (the daemon's tmpfs), as `kgpu mps-daemon` does.
#include <benchmark/benchmark.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <thread>
#include <vector>

#include <spdlog/spdlog.h>

#include "dra/claims/claim_store.h"
#include "dra/model/publication.h"
#include "dra/sharing/claim_sharing.h"
#include "spawn_logged.h"
#include "unit/dra/synthetic_node.h"

namespace {

using namespace kgpu;
using nlohmann::json;
using Clock = std::chrono::steady_clock;
namespace fs = std::filesystem;

constexpr uint64_t kGi = uint64_t{1} << 30;

// Under $TMPDIR (default /tmp), or `base`.
struct Scratch {
  fs::path path;
  explicit Scratch(const char* base = nullptr) {
    const char* tmp = base ? base : std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/kgpu-bench-share-XXXXXX";
    path = ::mkdtemp(pattern.data());
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// `kgpu mps-daemon` for the DRA share daemons, stopped (and its mounts gone) at the end.
struct Supervisor {
  pid_t pid = -1;
  explicit Supervisor(const Scratch& dir) {
    pid = bench::spawn_logged({KGPU_BINARY, "mps-daemon", "--mps-root", dir.path.string(),
                               "--mps-control-binary", std::string(KGPU_FIXTURES_DIR) + "/mps/nvidia-cuda-mps-control",
                               "--claim-shm-size", "16Mi"},
                              {}, (dir.path / "mps-daemon.log").string());
  }
  ~Supervisor() {
    if (pid <= 0) return;
    ::kill(pid, SIGTERM);
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
};

struct ShareNode {
  Scratch dir;  // CDI specs and the checkpoint: $TMPDIR (/dev/shm: tmpfs, as /var/run/cdi is)
  // The MPS root never under /dev/shm: each daemon gets a tmpfs of its own mounted there.
  Scratch mps{"/tmp"};
  Supervisor supervisor{mps};
  std::shared_ptr<dra::NodeDevices> devices = std::make_shared<dra::NodeDevices>();
  std::map<std::string, std::string> claims;  // name -> claim text
  std::unique_ptr<dra::ClaimStore> store;
  std::unique_ptr<dra::ClaimSharing> sharing;
  std::string device;
  std::string uuid;

  ShareNode() {
    spdlog::set_level(spdlog::level::warn);  // a line per daemon start and compute mode otherwise
    devices->inventory = testing::a100_node(8, 0);
    devices->config.mps_root = mps.path.string();
    uuid = devices->inventory.gpus[0].uuid;
    dra::SliceOptions o;
    o.node_name = "node-1";
    o.memory_shared_gpus = {uuid};
    o.memory_policy = {kGi, kGi, kGi};
    devices->pool = dra::build_publication(devices->inventory, o)->pools.at(0);
    device = devices->pool.devices.at(0).name;
    store = std::make_unique<dra::ClaimStore>(
        dra::ClaimStoreOptions{"gpu.nvidia.com", (dir.path / "plugin/claims.json").string(), (dir.path / "cdi").string(),
                               "boot"},
        [this](const std::string&, const std::string& name) {
          auto it = claims.find(name);
          return it == claims.end() ? Result<std::string>(Error::not_found(name)) : Result<std::string>(it->second);
        });
    store->set_devices(devices);
    auto no_op = [](const std::vector<std::string>&, const std::map<std::string, std::string>&) { return ok_status(); };
    dra::ClaimMpsOptions mps_options;
    mps_options.mps_root = devices->config.mps_root;
    sharing = std::make_unique<dra::ClaimSharing>(dra::NvidiaSmi{"nvidia-smi", {}}, no_op, dra::ClaimMps(mps_options));
  }

  dra::ClaimRef share(int n) {
    char uid[64];
    std::snprintf(uid, sizeof uid, "5a4e0000-0000-4000-8000-%012d", n);
    json result = {{"request", "gpu"},         {"driver", "gpu.nvidia.com"}, {"pool", "node-1"},
                   {"device", device},         {"shareID", std::string("s-") + uid},
                   {"consumedCapacity", {{"memory", "1Gi"}}}};
    claims[uid] = json{{"apiVersion", "resource.k8s.io/v1"},
                       {"kind", "ResourceClaim"},
                       {"metadata", {{"name", uid}, {"namespace", "team-a"}, {"uid", uid}}},
                       {"spec", {{"devices", {{"requests", json::array()}}}}},
                       {"status", {{"allocation", {{"devices", {{"results", {result}}, {"config", json::array()}}}}}}}}
                      .dump();
    return {uid, "team-a", uid};
  }
  // Each prepare's two halves, for where the time goes: the store (files written and fsync'd), the
  // sharing (the daemon asked for and waited on).
  std::vector<double> store_ms, sharing_ms;
  Status prepare(const dra::ClaimRef& ref) {
    const auto begun = Clock::now();
    auto p = store->prepare(ref);
    if (!p) return p.error();
    const auto stored = Clock::now();
    auto st = sharing->apply(store->prepared(), *p);
    store_ms.push_back(std::chrono::duration<double, std::milli>(stored - begun).count());
    sharing_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - stored).count());
    return st;
  }
  Status unprepare(const dra::ClaimRef& ref) {
    auto released = store->unprepare(ref.uid);
    if (!released) return released.error();
    if (*released) (void)sharing->undo(**released, [this] { return store->prepared(); });
    return sharing->run_pending_resets(pending_resets_of(*store));
  }
  bool daemon_gone() const { return !fs::exists(mps.path / "dra" / dra::share_daemon_name(uuid)); }
};

double median(std::vector<double> ms) {
  if (ms.empty()) return 0;
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

void report(benchmark::State& state, std::vector<double>& ms, const ShareNode& node) {
  if (ms.empty()) return;
  std::sort(ms.begin(), ms.end());
  state.counters["p50_ms"] = ms[ms.size() / 2];
  state.counters["p90_ms"] = ms[ms.size() * 9 / 10];
  state.counters["store_p50_ms"] = median(node.store_ms);
  state.counters["sharing_p50_ms"] = median(node.sharing_ms);
}

// One timed prepare of a new share, then its untimed unprepare. False (the state skipped with the
// reason) on a failure.
bool prepare_once(benchmark::State& state, ShareNode& node, int n, std::vector<double>& ms) {
  const auto ref = node.share(n);
  const auto begun = Clock::now();
  auto st = node.prepare(ref);
  const double took = std::chrono::duration<double, std::milli>(Clock::now() - begun).count();
  if (!st) return state.SkipWithError(st.error().message.c_str()), false;
  state.SetIterationTime(took / 1000);
  ms.push_back(took);
  if (auto u = node.unprepare(ref); !u) return state.SkipWithError(u.error().message.c_str()), false;
  return true;
}

void BM_SharePrepareDaemonRunning(benchmark::State& state) {
  ShareNode node;
  if (auto st = node.prepare(node.share(0)); !st) return state.SkipWithError(st.error().message.c_str());
  node.store_ms.clear();  // that share started the daemon, which it keeps up: not a sample
  node.sharing_ms.clear();
  std::vector<double> ms;
  int n = 1;
  for (auto _ : state)
    if (!prepare_once(state, node, n++, ms)) return;
  report(state, ms, node);
}

void BM_SharePrepareDaemonStart(benchmark::State& state) {
  ShareNode node;
  std::vector<double> ms;
  int n = 1;
  for (auto _ : state) {
    if (!prepare_once(state, node, n++, ms)) return;
    // The supervisor quits the daemon and removes its folder: the next start is a real one.
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    while (!node.daemon_gone() && Clock::now() < deadline) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    if (!node.daemon_gone()) return state.SkipWithError("the daemon did not quit within 10 s");
  }
  report(state, ms, node);
}

BENCHMARK(BM_SharePrepareDaemonRunning)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(200);
BENCHMARK(BM_SharePrepareDaemonStart)->UseManualTime()->Unit(benchmark::kMillisecond)->Iterations(20);

}  // namespace

BENCHMARK_MAIN();
