// Injected XID -> HealthMonitor callback latency, p50/p99 over 100 events, on the simulated DGX A100
// (the fake libnvidia-ml.so.1 loaded in-process, XIDs injected through its control file). Measures
// the NVML event wait wake-up, policy, queue hand-off and dispatcher thread; not gRPC.
//   bench_health_xid_latency [events]
#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <string>
#include <vector>

#include <spdlog/spdlog.h>

#include "fake-nvml/fake_nvml_control.h"
#include "health/monitor.h"
#include "nvml/discovery.h"

using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  const int events = argc > 1 ? std::atoi(argv[1]) : 100;
  spdlog::set_level(spdlog::level::warn);
  std::string tmpl = (std::filesystem::temp_directory_path() / "kgpu-bench-xid-XXXXXX").string();
  const std::string dir = ::mkdtemp(tmpl.data());
  kgpu::fake_nvml::Control ctl(dir + "/nvml.control");
  ::setenv("KGPU_FAKE_NVML_FLEET", (std::string(KGPU_FIXTURES_DIR) + "/fleets/dgx-a100.yaml").c_str(), 1);
  ::setenv("KGPU_FAKE_NVML_CONTROL", ctl.path().c_str(), 1);

  auto nvml = kgpu::NvmlLibrary::load_file(std::string(KGPU_FAKE_NVML_DIR) + "/libnvidia-ml.so.1");
  if (!nvml) {
    std::fprintf(stderr, "load: %s\n", nvml.error().message.c_str());
    return 1;
  }
  auto inventory = kgpu::discover_nvidia(**nvml, {});
  if (!inventory || inventory->gpus.empty()) {
    std::fprintf(stderr, "discovery failed\n");
    return 1;
  }

  std::mutex mu;
  std::condition_variable cv;
  int received = 0;
  Clock::time_point received_at;
  kgpu::HealthMonitorOptions options;
  options.config.recovery_enabled = false;  // measure the event path alone
  kgpu::HealthMonitor monitor(*nvml, options, [&](const kgpu::HealthEvent&) {
    std::lock_guard lock(mu);
    received_at = Clock::now();
    ++received;
    cv.notify_all();
  });
  if (auto st = monitor.start(*inventory); !st) {
    std::fprintf(stderr, "monitor: %s\n", st.error().message.c_str());
    return 1;
  }
  for (const auto& g : inventory->gpus) {
    if (!ctl.wait_registered(g.uuid, std::chrono::seconds(5))) {
      std::fprintf(stderr, "events never registered for %s\n", g.uuid.c_str());
      return 1;
    }
  }

  // One untimed event first: the first pass through lazily bound NVML symbols and cold code costs
  // milliseconds once and would otherwise be the p99 of a 100-event run.
  std::vector<double> micros;
  for (int i = -1; i < events; ++i) {
    const auto& uuid = inventory->gpus[static_cast<size_t>(i + 1) % inventory->gpus.size()].uuid;
    const auto sent = Clock::now();
    ctl.inject_xid(uuid, 74);
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(5), [&] { return received > i + 1; })) {
      std::fprintf(stderr, "event %d never arrived\n", i);
      return 1;
    }
    if (i >= 0) micros.push_back(std::chrono::duration<double, std::micro>(received_at - sent).count());
  }
  if (!monitor.stop()) std::_Exit(1);  // never leave a thread inside NVML at exit
  std::filesystem::remove_all(dir);

  std::sort(micros.begin(), micros.end());
  auto pct = [&](double p) { return micros[std::min(micros.size() - 1, static_cast<size_t>(p * micros.size()))]; };
  std::printf("injected XID -> monitor callback, %d events on dgx-a100 (fake NVML)\n", events);
  std::printf("  p50 %.1f us   p99 %.1f us   min %.1f us   max %.1f us\n", pct(0.50), pct(0.99), micros.front(),
              micros.back());
  return 0;
}
