// Dynamic MIG prepare (issue 42): ClaimStore::prepare of a new claim for one 3g.40gb placement on
// an H100 of the fake NVML (hgx-h100 fleet): the intent in the checkpoint, MIG mode, the GPU and
// compute instance, the CDI spec with the new MIG device's nodes, the checkpoint with the ids.
// Target: p50 < 5 ms excluding NVML's own time.
//   bench_dra_dynamic_mig_prepare                  (files under $TMPDIR, default /tmp)
//   TMPDIR=/dev/shm bench_dra_dynamic_mig_prepare  (tmpfs, as /var/run/cdi is)
// BM_DynamicMigPrepare: the prepare, timed whole (the unprepare that makes the next iteration a
//   first call again is not timed). Counters: p50_ms (the prepare), nvml_p50_ms (the time spent
//   inside the NVML side, DynamicMigControl, in that prepare), excl_nvml_p50_ms (the prepare less
//   its NVML time, per iteration, then the median): the figure the target is for.
// BM_DynamicMigNvmlCreateDestroy: MigInstances::create + destroy alone, NVML's share for scale.
#include <benchmark/benchmark.h>
#include <stdlib.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <type_traits>
#include <vector>

#include <nlohmann/json.hpp>

#include "dra/claims/claim_store.h"
#include "dra/claims/nvml_mig_control.h"
#include "dra/model/dynamic_mig.h"
#include "dra/model/publication.h"
#include "nvml/discovery.h"
#include "unit/dra/h100_mig_facts.h"

namespace {

using namespace kgpu;
using Clock = std::chrono::steady_clock;

constexpr const char* kUid = "0b6f2c4e-2222-4000-8000-00000000d1a9";

struct Scratch {
  std::filesystem::path path;
  Scratch() {
    const char* tmp = std::getenv("TMPDIR");
    std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/kgpu-bench-dynmig-XXXXXX";
    path = ::mkdtemp(pattern.data());
  }
  ~Scratch() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
};

// The fake NVML for the hgx-h100 fleet, its fixture tree under `root`, a session held.
std::shared_ptr<NvmlLibrary> fake_nvml(const std::string& root) {
  const std::string fleet = std::string(KGPU_FIXTURES_DIR) + "/fleets/hgx-h100.yaml";
  ::setenv("KGPU_FAKE_NVML_FLEET", fleet.c_str(), 1);
  ::setenv("KGPU_FAKE_NVML_ROOT", root.c_str(), 1);
  ::unsetenv("KGPU_FAKE_NVML_CONTROL");
  const std::string cmd = "'" + std::string(KGPU_FAKE_NVML_DIR) + "/kgpu-fake-nvml-fixture' '" + fleet + "' '" + root + "'";
  if (std::system(cmd.c_str()) != 0) return nullptr;
  auto lib = NvmlLibrary::load_file(std::string(KGPU_FAKE_NVML_DIR) + "/libnvidia-ml.so.1");
  return lib ? *lib : nullptr;
}

// Every call to NVML's side timed, so the prepare's own time can be told from NVML's.
class TimedControl final : public dra::DynamicMigControl {
 public:
  template <typename F>
  std::invoke_result_t<F> timed(F f) const {
    const auto start = Clock::now();
    auto out = f();
    spent += Clock::now() - start;
    return out;
  }
  explicit TimedControl(std::shared_ptr<const dra::DynamicMigControl> inner) : inner_(std::move(inner)) {}
  Status enable_mig(const std::string& p) const override { return timed([&] { return inner_->enable_mig(p); }); }
  Result<dra::MigInstanceMade> create(const dra::MigPlacement& w) const override {
    return timed([&] { return inner_->create(w); });
  }
  Status destroy(const std::string& p, unsigned gi, unsigned ci) const override {
    return timed([&] { return inner_->destroy(p, gi, ci); });
  }
  Result<std::vector<dra::GpuInstanceAt>> gpu_instances(const std::string& p) const override {
    return timed([&] { return inner_->gpu_instances(p); });
  }
  std::string disable_mig_if_empty(const std::string& p) const override {
    return timed([&] { return inner_->disable_mig_if_empty(p); });
  }
  mutable Clock::duration spent{};

 private:
  std::shared_ptr<const dra::DynamicMigControl> inner_;
};

double median_ms(std::vector<double> v) {
  if (v.empty()) return 0;
  std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

void BM_DynamicMigPrepare(benchmark::State& state) {
  Scratch dir;
  auto nvml = fake_nvml((dir.path / "node").string());
  if (!nvml) return state.SkipWithError("fake NVML not loaded");
  NvidiaDiscoveryOptions o;
  o.sysfs_root = (dir.path / "node/sys").string();
  o.proc_root = (dir.path / "node/proc").string();
  o.dev_root = (dir.path / "node").string();
  auto inventory = discover_nvidia(*nvml, o);
  if (!inventory) return state.SkipWithError(inventory.error().message.c_str());
  auto control = dra::NvmlMigControl::bind_initialized(nvml, o.proc_root);
  if (!control) return state.SkipWithError(control.error().message.c_str());
  auto timed = std::make_shared<TimedControl>(*control);

  auto node = std::make_shared<dra::NodeDevices>();
  node->inventory = *inventory;
  node->config.nvidia_driver_root = o.dev_root;
  node->config.proc_root = o.proc_root;
  dra::SliceOptions so;
  so.node_name = "node-1";
  node->pool = dra::build_publication(node->inventory, so)->pools.at(0);
  const Gpu& gpu = node->inventory.gpus.at(0);
  auto facts = dra::testing::h100_mig_facts(static_cast<unsigned>(gpu.minor));
  facts.uuid = gpu.uuid;
  const auto layout = dra::dynamic_mig_layout(facts);
  for (const auto& d : layout.devices)
    if (!d.profile.empty()) node->pool.devices.push_back(dra::DraDevice{d.name, nullptr, {{"uuid", gpu.uuid}}, {}});
  node->dynamic_mig = {layout};
  const std::string device = dra::dynamic_mig_device_name(static_cast<unsigned>(gpu.minor), "3g.40gb", 9, 4);
  const std::string text =
      nlohmann::json{{"apiVersion", "resource.k8s.io/v1"},
                     {"kind", "ResourceClaim"},
                     {"metadata", {{"name", "slice"}, {"namespace", "team-a"}, {"uid", kUid}}},
                     {"spec", {{"devices", {{"requests", nlohmann::json::array()}}}}},
                     {"status",
                      {{"allocation",
                        {{"devices",
                          {{"results",
                            {{{"request", "mig"}, {"driver", "gpu.nvidia.com"}, {"pool", "node-1"}, {"device", device}}}},
                           {"config", nlohmann::json::array()}}}}}}}}
          .dump();
  dra::ClaimStore store({"gpu.nvidia.com", (dir.path / "plugin/claims.json").string(), (dir.path / "cdi").string(), "boot"},
                        [text](const std::string&, const std::string&) { return Result<std::string>(text); });
  store.set_devices(node);
  (void)store.set_mig_control(timed);
  const dra::ClaimRef ref{kUid, "team-a", "slice"};

  std::vector<double> whole, nvml_ms, excl;
  for (auto _ : state) {
    timed->spent = {};
    const auto start = Clock::now();
    auto r = store.prepare(ref);
    const auto took = Clock::now() - start;
    const auto in_nvml = timed->spent;
    if (!r) return state.SkipWithError(r.error().message.c_str());
    state.SetIterationTime(std::chrono::duration<double>(took).count());
    whole.push_back(std::chrono::duration<double, std::milli>(took).count());
    nvml_ms.push_back(std::chrono::duration<double, std::milli>(in_nvml).count());
    excl.push_back(std::chrono::duration<double, std::milli>(took - in_nvml).count());
    if (!store.unprepare(kUid)) return state.SkipWithError("unprepare failed");
  }
  state.counters["p50_ms"] = median_ms(whole);
  state.counters["nvml_p50_ms"] = median_ms(nvml_ms);
  state.counters["excl_nvml_p50_ms"] = median_ms(excl);
}
BENCHMARK(BM_DynamicMigPrepare)->UseManualTime()->Unit(benchmark::kMillisecond);

void BM_DynamicMigNvmlCreateDestroy(benchmark::State& state) {
  Scratch dir;
  auto nvml = fake_nvml((dir.path / "node").string());
  if (!nvml) return state.SkipWithError("fake NVML not loaded");
  auto control = dra::NvmlMigControl::bind_initialized(nvml, (dir.path / "node/proc").string());
  if (!control) return state.SkipWithError(control.error().message.c_str());
  auto gpu = nvml->device_by_index(0);
  if (!gpu) return state.SkipWithError("no GPU 0");
  const MigInstances& mig = (*control)->instances();
  if (!mig.set_mig_mode(*gpu, true)) return state.SkipWithError("MIG mode");
  for (auto _ : state) {
    auto made = mig.create(*gpu, 9, {4, 4});
    if (!made) return state.SkipWithError(made.error().message.c_str());
    if (!mig.destroy(*gpu, made->gpu_instance_id, made->compute_instance_id)) return state.SkipWithError("destroy");
  }
}
BENCHMARK(BM_DynamicMigNvmlCreateDestroy)->Unit(benchmark::kMicrosecond);

}  // namespace

BENCHMARK_MAIN();
