// Transport under attack (issue 27): the real `kgpu plugin` on a simulated node (fake NVML, DGX A100)
// serving the in-process kubelet simulator, while raw HTTP/2 attackers (tests/support/raw_h2_client.h)
// work on its device-plugin socket. For each attack it prints the daemon's VmRSS before, at its peak
// during, and after the attack, and the legitimate kubelet's Allocate round trip (p50 / p99 / max, µs)
// while the attack runs:
//   1 unbounded request memory   connections x 128 streams, each announcing a 4 MiB message and
//                                sending 1 MiB of it, never finishing; then two-message unary calls
//   3 HPACK bomb                 one request whose header block repeats a 4 KiB field (nghttp2's
//                                encoder indexes it: a few KiB on the wire decoding to MiBs), a new
//                                connection each time
//   5 stalled ListAndWatch       streams that read nothing while the device list (time-slicing x2048,
//                                ~1 MiB per list) changes: each stalled stream pins its old list
// Usage: bench_transport_attack [--binary KGPU] [--seconds S]   (default: this build's kgpu, 5 s each)
#include <signal.h>
#include <sys/wait.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <string>
#include <thread>
#include <vector>

#include "proc_sample.h"
#include "sim/kubelet_sim.h"
#include "spawn_logged.h"
#include "support/raw_h2_client.h"

namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
using kgpu::test::grpc_fields;
using kgpu::test::grpc_frame;
using kgpu::test::RawH2Client;

const std::string kGpu = "nvidia.com/gpu";

long rss_mib(pid_t pid) { return kgpu::bench::sample_process(pid).rss_kib / 1024; }

struct Figures {
  long rss_before = 0, rss_peak = 0, rss_after = 0;
  std::vector<double> allocate_us;
  int allocate_errors = 0;
};

// Runs `attack` (until `stop`) next to a kubelet that allocates one GPU in a loop and a sampler of
// the daemon's RSS.
template <typename Attack>
Figures measure(pid_t pid, kgpu::sim::KubeletSim& sim, std::chrono::seconds duration, Attack attack) {
  Figures f;
  f.rss_before = rss_mib(pid);
  std::atomic<bool> stop{false};
  std::thread attacker([&] { attack(stop); });
  std::thread sampler([&] {
    while (!stop) {
      f.rss_peak = std::max(f.rss_peak, rss_mib(pid));
      std::this_thread::sleep_for(20ms);  // a sampling period, not synchronisation
    }
  });
  // Replicas below 1000: IDs that every config of the churn in attack 5 keeps.
  std::vector<std::string> ids;
  for (const auto& id : sim.snapshot().find(kGpu)->device_ids())
    if (auto at = id.rfind("::"); at != std::string::npos && std::stoi(id.substr(at + 2)) < 1000) ids.push_back(id);
  if (ids.empty()) return f;
  auto end = Clock::now() + duration;
  for (size_t i = 0; Clock::now() < end; ++i) {
    auto t0 = Clock::now();
    auto r = sim.allocate(kGpu, {ids[i % ids.size()]});
    f.allocate_us.push_back(std::chrono::duration<double, std::micro>(Clock::now() - t0).count());
    if (!r) f.allocate_errors++;
  }
  stop = true;
  attacker.join();
  sampler.join();
  std::this_thread::sleep_for(500ms);  // let the daemon drop what the attackers' connections held
  f.rss_after = rss_mib(pid);
  return f;
}

void print(const char* name, Figures f) {
  std::sort(f.allocate_us.begin(), f.allocate_us.end());
  auto at = [&](double q) {
    return f.allocate_us.empty() ? 0.0 : f.allocate_us[static_cast<size_t>(q * (f.allocate_us.size() - 1))];
  };
  std::printf("| %-28s | %5ld | %5ld | %5ld | %8.0f | %8.0f | %9.0f | %zu (%d failed) |\n", name, f.rss_before,
              f.rss_peak, f.rss_after, at(0.5), at(0.99), at(1.0), f.allocate_us.size(), f.allocate_errors);
}

}  // namespace

int main(int argc, char** argv) {
  std::string binary = KGPU_BINARY;
  int seconds = 5;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--binary" && i + 1 < argc) binary = argv[++i];
    if (a == "--seconds" && i + 1 < argc) seconds = std::stoi(argv[++i]);
  }
  char templ[] = "/tmp/kgpu-attack-XXXXXX";
  if (!::mkdtemp(templ)) return 1;
  std::string tmp = templ, plugin_dir = tmp + "/dp", nvml_dir = KGPU_FAKE_NVML_DIR;
  fs::create_directories(plugin_dir);
  std::string fleet = std::string(KGPU_FIXTURES_DIR) + "/fleets/dgx-a100.yaml";
  std::ofstream(tmp + "/config.yaml")
      << "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: 2048\n";
  kgpu::sim::KubeletSim sim(plugin_dir);
  if (!sim.start()) return 1;
  std::vector<std::string> plugin_argv = {binary, "plugin", "--kubelet-socket", plugin_dir + "/kubelet.sock",
                                          "--log-level", "error", "--config-file", tmp + "/config.yaml"};
  pid_t pid = kgpu::bench::spawn_logged(plugin_argv, {"LD_LIBRARY_PATH=" + nvml_dir, "KGPU_FAKE_NVML_FLEET=" + fleet},
                                        tmp + "/plugin.log");
  if (pid <= 0 || !sim.wait_for([](const kgpu::sim::Snapshot& s) { return s.ready(kGpu); }, 30s)) {
    std::cerr << "plugin did not register; log in " << tmp << "\n";
    return 1;
  }
  const std::string socket = plugin_dir + "/kgpu-nvidia.com-gpu.sock";
  auto duration = std::chrono::seconds(seconds);
  std::printf("kgpu transport under attack (%s, time-slicing x2048 = 16,384 IDs, %d s each)\n\n",
              fs::path(binary).filename().c_str(), seconds);
  std::printf("| attack | RSS before (MiB) | peak | after | Allocate p50 (µs) | p99 | max | calls |\n");
  std::printf("|---|---|---|---|---|---|---|---|\n");

  print("none", measure(pid, sim, duration, [](std::atomic<bool>&) {}));

  print("1 request memory", measure(pid, sim, duration, [&](std::atomic<bool>& stop) {
    std::string partial = grpc_frame(std::string(4u << 20, 'm')).substr(0, 1u << 20);
    std::string two = grpc_frame("a") + grpc_frame("b");
    while (!stop) {
      std::vector<std::unique_ptr<RawH2Client>> clients;
      for (int c = 0; c < 8 && !stop; ++c) {
        clients.push_back(std::make_unique<RawH2Client>(socket));
        for (int s = 0; s < 128; ++s)
          clients.back()->request(grpc_fields("/v1beta1.DevicePlugin/Allocate"), s % 2 ? &partial : &two, true);
        clients.back()->run_until([&] { return stop.load(); }, 300ms);
      }
    }
  }));

  print("3 HPACK bomb", measure(pid, sim, duration, [&](std::atomic<bool>& stop) {
    auto fields = grpc_fields("/v1beta1.DevicePlugin/Allocate");
    for (int i = 0; i < 4000; ++i) fields.push_back({"x-bomb", std::string(4096, 'b')});
    while (!stop) {
      RawH2Client client(socket);
      client.request(fields);
      client.run_until([&] { return client.goaway() || stop.load(); }, 2s);
    }
  }));

  print("5 stalled ListAndWatch", measure(pid, sim, duration, [&](std::atomic<bool>& stop) {
    // Streams that never read: each holds the list being written when the next one comes.
    std::vector<std::unique_ptr<RawH2Client>> clients;
    std::string empty = grpc_frame("");
    for (int c = 0; c < 32; ++c) {
      clients.push_back(std::make_unique<RawH2Client>(socket));
      for (int s = 0; s < 8; ++s) clients.back()->request(grpc_fields("/v1beta1.DevicePlugin/ListAndWatch"), &empty);
      clients.back()->run_until([] { return false; }, 50ms);  // send the requests, read the first bytes only
    }
    // Churn: a config change re-plans and sends every stream a new list.
    for (int i = 0; !stop; ++i) {
      std::ofstream(tmp + "/config.yaml")
          << "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: "
          << (i % 2 ? 2048 : 2047) << "\n";
      std::this_thread::sleep_for(300ms);  // the attack's pace
    }
  }));

  ::kill(pid, SIGTERM);
  int status = 0;
  ::waitpid(pid, &status, 0);
  fs::remove_all(tmp);
  return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : 1;
}
