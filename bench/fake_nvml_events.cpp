// Injected XID -> nvmlEventSetWait latency of the simulated NVML (target < 5 ms).
// A waiter thread loops in nvmlEventSetWait_v2 like a health checker; the main thread appends an XID
// to the control file (the same path a test in another process takes) and measures until the waiter
// has the event. Plain program: prints p50 / p99 / max.
//   bench_fake_nvml_events [iterations]
#include <dlfcn.h>
#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "fake-nvml/fake_nvml_control.h"
#include "nvml/nvml_abi.h"

namespace {

template <typename Fn>
Fn need(void* lib, const char* name) {
  void* p = dlsym(lib, name);
  if (p == nullptr) {
    std::fprintf(stderr, "missing %s\n", name);
    std::exit(1);
  }
  return reinterpret_cast<Fn>(p);
}

}  // namespace

int main(int argc, char** argv) {
  const int iterations = argc > 1 ? std::atoi(argv[1]) : 2000;
  std::string tmpl = (std::filesystem::temp_directory_path() / "fake-nvml-bench-XXXXXX").string();
  if (mkdtemp(tmpl.data()) == nullptr) return 1;
  const std::string control_path = tmpl + "/nvml.control";
  kgpu::fake_nvml::Control control(control_path);
  setenv("KGPU_FAKE_NVML_FLEET", (std::string(KGPU_FIXTURES_DIR) + "/fleets/dgx-a100.yaml").c_str(), 1);
  setenv("KGPU_FAKE_NVML_CONTROL", control_path.c_str(), 1);

  void* lib = dlopen((std::string(KGPU_FAKE_NVML_DIR) + "/libnvidia-ml.so.1").c_str(), RTLD_LAZY | RTLD_GLOBAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "dlopen: %s\n", dlerror());
    return 1;
  }
  auto init = need<nvmlInit_fn>(lib, "nvmlInit_v2");
  auto shutdown = need<nvmlShutdown_fn>(lib, "nvmlShutdown");
  auto by_index = need<nvmlDeviceGetHandleByIndex_fn>(lib, "nvmlDeviceGetHandleByIndex_v2");
  auto get_uuid = need<nvmlDeviceGetUUID_fn>(lib, "nvmlDeviceGetUUID");
  auto create = need<nvmlEventSetCreate_fn>(lib, "nvmlEventSetCreate");
  auto reg = need<nvmlDeviceRegisterEvents_fn>(lib, "nvmlDeviceRegisterEvents");
  auto wait = need<nvmlEventSetWait_fn>(lib, "nvmlEventSetWait_v2");
  auto free_set = need<nvmlEventSetFree_fn>(lib, "nvmlEventSetFree");

  nvmlDevice_t gpu = nullptr;
  nvmlEventSet_t set = nullptr;
  char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE];
  if (init() != NVML_SUCCESS || by_index(0, &gpu) != NVML_SUCCESS || get_uuid(gpu, uuid, sizeof uuid) != NVML_SUCCESS ||
      create(&set) != NVML_SUCCESS || reg(gpu, nvmlEventTypeXidCriticalError, set) != NVML_SUCCESS) {
    std::fprintf(stderr, "setup failed\n");
    return 1;
  }

  std::mutex mu;
  std::condition_variable cv;
  unsigned long long received = 0;  // highest XID seen
  std::chrono::steady_clock::time_point received_at;
  std::atomic<bool> done{false};
  std::thread waiter([&] {
    while (!done) {
      nvmlEventData_t event{};
      if (wait(set, &event, 1000) != NVML_SUCCESS) continue;
      const auto now = std::chrono::steady_clock::now();
      std::lock_guard lock(mu);
      received = event.eventData;
      received_at = now;
      cv.notify_all();
    }
  });

  std::vector<double> latencies_us;
  latencies_us.reserve(static_cast<size_t>(iterations));
  for (int i = 1; i <= iterations; ++i) {
    const auto sent = std::chrono::steady_clock::now();
    control.inject_xid(uuid, static_cast<unsigned long long>(i));
    std::unique_lock lock(mu);
    if (!cv.wait_for(lock, std::chrono::seconds(5), [&] { return received == static_cast<unsigned long long>(i); })) {
      std::fprintf(stderr, "event %d not delivered within 5 s\n", i);
      return 1;
    }
    latencies_us.push_back(std::chrono::duration<double, std::micro>(received_at - sent).count());
  }
  done = true;
  waiter.join();
  free_set(set);
  shutdown();
  std::filesystem::remove_all(tmpl);

  std::sort(latencies_us.begin(), latencies_us.end());
  auto pct = [&](double p) { return latencies_us[static_cast<size_t>(p * static_cast<double>(latencies_us.size() - 1))]; };
  std::printf("injected XID -> nvmlEventSetWait_v2 return, %d events (dgx-a100 fleet, control file + inotify)\n", iterations);
  std::printf("  p50 %.1f us   p99 %.1f us   max %.1f us   (target < 5000 us)\n", pct(0.50), pct(0.99), latencies_us.back());
  return pct(0.99) < 5000.0 ? 0 : 2;
}
