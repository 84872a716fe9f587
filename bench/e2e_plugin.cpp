// End-to-end benchmark of `kgpu plugin` on a simulated node (fake NVML) against the in-process
// kubelet simulator over real unix sockets. Prints:
//   launch -> all resources registered (ms, median of several launches)
//   Allocate and GetPreferredAllocation round trips (p50 / p99 / max, µs)
//   kubelet restart -> re-registered (ms, median / max)
//   daemon RSS and threads idle and after 10,000 Allocates, context switches while idle
//   Allocate throughput with 8 concurrent clients (calls/s)
// Usage: bench_e2e_plugin [FLEET.yaml] [--replicas N] [--binary KGPU]   (default dgx-a100.yaml, no
// sharing, the kgpu built with the bench; --binary measures another build, e.g. an older one)
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "fake-nvml/fake_nvml_control.h"
#include "sim/kubelet_sim.h"
#include "sim/sim_steps.h"
#include "spawn_logged.h"

extern char** environ;

namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
const std::string kGpu = "nvidia.com/gpu";

double us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

struct Stats {
  double p50, p99, max;
};
Stats stats(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  auto at = [&](double q) { return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))]; };
  return {at(0.50), at(0.99), v.back()};
}

pid_t spawn(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env, const std::string& log) {
  return kgpu::bench::spawn_logged(argv, extra_env, log);
}

int wait_exit(pid_t pid, std::chrono::milliseconds timeout) {
  int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid, 0));
  if (fd >= 0) {
    pollfd p{fd, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(timeout.count()));
    ::close(fd);
  }
  int st = 0;
  if (::waitpid(pid, &st, WNOHANG) != pid) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, &st, 0);
    return -1;
  }
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

// VmRSS (KiB), Threads, voluntary+nonvoluntary context switches from /proc/<pid>/status.
struct ProcStatus {
  long rss_kib = 0, threads = 0, ctxt = 0;
};
ProcStatus proc_status(pid_t pid) {
  ProcStatus s;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    std::istringstream l(line);
    std::string key;
    long v = 0;
    l >> key >> v;
    if (key == "VmRSS:") s.rss_kib = v;
    if (key == "Threads:") s.threads = v;
    if (key == "voluntary_ctxt_switches:" || key == "nonvoluntary_ctxt_switches:") s.ctxt += v;
  }
  // Every thread's switches, not only the main thread's.
  s.ctxt = 0;
  for (const auto& t : fs::directory_iterator("/proc/" + std::to_string(pid) + "/task")) {
    std::ifstream ts(t.path() / "status");
    for (std::string line; std::getline(ts, line);) {
      std::istringstream l(line);
      std::string key;
      long v = 0;
      l >> key >> v;
      if (key == "voluntary_ctxt_switches:" || key == "nonvoluntary_ctxt_switches:") s.ctxt += v;
    }
  }
  return s;
}

}  // namespace

int main(int argc, char** argv) {
  std::string fleet = std::string(KGPU_FIXTURES_DIR) + "/fleets/dgx-a100.yaml";
  int replicas = 0;
  std::string binary = KGPU_BINARY;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--replicas" && i + 1 < argc) replicas = std::stoi(argv[++i]);
    else if (a == "--binary" && i + 1 < argc) binary = argv[++i];
    else fleet = a.find('/') == std::string::npos ? std::string(KGPU_FIXTURES_DIR) + "/fleets/" + a : a;
  }
  char templ[] = "/tmp/kgpu-bench-XXXXXX";
  if (!::mkdtemp(templ)) return 1;
  std::string tmp = templ;
  std::string plugin_dir = tmp + "/dp";
  fs::create_directories(plugin_dir);
  std::string nvml_dir = KGPU_FAKE_NVML_DIR;
  std::string log = tmp + "/plugin.log";

  std::vector<std::string> plugin_argv = {binary, "plugin", "--kubelet-socket", plugin_dir + "/kubelet.sock",
                                          "--log-level", "warn"};
  pid_t gen = spawn({nvml_dir + "/kgpu-fake-nvml-fixture", fleet, tmp + "/node"}, {}, tmp + "/fixture.log");
  if (gen > 0 && wait_exit(gen, 30s) == 0)
    plugin_argv.insert(plugin_argv.end(), {"--sysfs-root", tmp + "/node/sys", "--proc-root", tmp + "/node/proc",
                                           "--dev-root", tmp + "/node"});
  // Fast recovery so that section 5 can make the same GPUs unhealthy again and again.
  std::ofstream config(tmp + "/config.yaml");
  config << "version: v1\nkgpu:\n  health:\n    recovery:\n      probeIntervalMs: 1\n      quietPeriodMs: 5\n";
  if (replicas > 1)
    config << "sharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: " << replicas
           << "\n";
  config.close();
  plugin_argv.insert(plugin_argv.end(), {"--config-file", tmp + "/config.yaml"});
  kgpu::fake_nvml::Control control(tmp + "/nvml.control");
  std::vector<std::string> env = {"LD_LIBRARY_PATH=" + nvml_dir, "KGPU_FAKE_NVML_FLEET=" + fleet,
                                  "KGPU_FAKE_NVML_CONTROL=" + control.path()};

  kgpu::sim::KubeletSim sim(plugin_dir);
  if (!sim.start()) return 1;
  std::cout << "kgpu end-to-end benchmark: fleet " << fs::path(fleet).filename().string()
            << (replicas > 1 ? ", time-slicing x" + std::to_string(replicas) : std::string()) << "\n";

  // 1. launch -> registered and streaming (median of 5 launches; the last one stays up).
  std::vector<double> launch;
  pid_t pid = -1;
  for (int run = 0; run < 5; ++run) {
    int regs = sim.snapshot().registrations;
    auto t0 = Clock::now();
    pid = spawn(plugin_argv, env, log);
    bool ok = sim.wait_for(
        [&](const kgpu::sim::Snapshot& s) {
          const auto* r = s.find(kGpu);
          return s.registrations > regs && r && r->connected && r->last_update > t0;
        },
        30s);
    if (!ok) {
      std::cerr << "plugin did not register; log: " << log << "\n";
      return 1;
    }
    launch.push_back(us(sim.snapshot().find(kGpu)->last_registered - t0) / 1000.0);
    if (run < 4) {
      ::kill(pid, SIGTERM);
      wait_exit(pid, 5s);
    }
  }
  std::sort(launch.begin(), launch.end());
  auto ids = sim.snapshot().find(kGpu)->device_ids();
  std::printf("devices advertised                      %zu\n", ids.size());
  std::printf("launch -> registered (ms)               median %.2f  min %.2f  max %.2f\n", launch[2], launch[0],
              launch[4]);

  auto idle0 = proc_status(pid);
  std::this_thread::sleep_for(3s);  // measuring idle behaviour, not synchronising
  auto idle1 = proc_status(pid);
  std::printf("idle: RSS %.1f MiB, threads %ld, context switches in 3 s: %ld\n", idle1.rss_kib / 1024.0,
              idle1.threads, idle1.ctxt - idle0.ctxt);

  // 2. Allocate round trips.
  std::vector<double> alloc;
  alloc.reserve(10000);
  for (int i = 0; i < 10000; ++i) {
    const std::string& id = ids[static_cast<size_t>(i) % ids.size()];
    auto t0 = Clock::now();
    auto r = sim.allocate(kGpu, {id});
    alloc.push_back(us(Clock::now() - t0));
    if (!r) {
      std::cerr << "Allocate failed: " << r.error().message << "\n";
      return 1;
    }
  }
  auto a = stats(alloc);
  std::printf("Allocate round trip (us, 10000 calls)   p50 %.1f  p99 %.1f  max %.1f\n", a.p50, a.p99, a.max);
  auto after = proc_status(pid);
  std::printf("after 10,000 Allocates: RSS %.1f MiB (idle %.1f MiB), threads %ld\n", after.rss_kib / 1024.0,
              idle1.rss_kib / 1024.0, after.threads);

  // 2b. Throughput: 8 clients (threads of the simulator) calling Allocate at once.
  {
    constexpr int kClients = 8, kCalls = 2000;
    std::atomic<int> failures{0};
    auto t0 = Clock::now();
    std::vector<std::thread> clients;
    for (int c = 0; c < kClients; ++c)
      clients.emplace_back([&, c] {
        for (int i = 0; i < kCalls; ++i)
          if (!sim.allocate(kGpu, {ids[static_cast<size_t>(c + i) % ids.size()]})) failures++;
      });
    for (auto& t : clients) t.join();
    double seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    std::printf("Allocate, %d concurrent clients           %.0f calls/s (%d failed)\n", kClients,
                kClients * kCalls / seconds, failures.load());
  }

  // 3. GetPreferredAllocation round trips, sizes 1..4 over every healthy device.
  for (int size : {1, 2, 4}) {
    if (static_cast<size_t>(size) > ids.size()) break;
    std::vector<double> pref;
    for (int i = 0; i < 2000; ++i) {
      auto t0 = Clock::now();
      auto r = sim.preferred(kGpu, ids, {}, size);
      pref.push_back(us(Clock::now() - t0));
      if (!r) {
        std::cerr << "GetPreferredAllocation failed: " << r.error().message << "\n";
        return 1;
      }
    }
    auto p = stats(pref);
    std::printf("GetPreferredAllocation size %d (us)      p50 %.1f  p99 %.1f  max %.1f\n", size, p.p50, p.p99, p.max);
  }

  // 4. kubelet restart -> re-registered.
  std::vector<double> restarts;
  for (int i = 0; i < 20; ++i) {
    auto took = kgpu::sim::restart_and_wait(sim, 10s);
    if (!took) {
      std::cerr << took.error().message << "\n";
      return 1;
    }
    restarts.push_back(static_cast<double>(took->count()) / 1000.0);
  }
  std::sort(restarts.begin(), restarts.end());
  std::printf("kubelet restart -> re-registered (ms)   median %.2f  min %.2f  max %.2f\n",
              restarts[restarts.size() / 2], restarts.front(), restarts.back());
  // 5. injected XID -> the kubelet simulator's ListAndWatch shows the device Unhealthy (100 events;
  // XID 74 is recoverable, so each GPU comes back after the 5 ms quiet period before it is reused).
  std::vector<double> xid;
  std::string gpu_uuid_of_first = ids.front().substr(0, ids.front().find("::"));
  if (!control.wait_registered(gpu_uuid_of_first, 10s)) {
    std::cerr << "the daemon never registered NVML events; log: " << log << "\n";
    return 1;
  }
  for (int i = 0; i < 100; ++i) {
    const std::string& id = ids[static_cast<size_t>(i) % ids.size()];
    std::string uuid = id.substr(0, id.find("::"));
    auto is = [&](const char* health) {
      return [&, health](const kgpu::sim::Snapshot& snap) {
        const auto* r = snap.find(kGpu);
        if (!r) return false;
        for (const auto& d : r->devices)
          if (d.id == id) return d.health == health;
        return false;
      };
    };
    if (!sim.wait_for(is("Healthy"), 10s)) return 1;
    auto t0 = Clock::now();
    control.inject_xid(uuid, 74);
    if (!sim.wait_for(is("Unhealthy"), 10s)) {
      std::cerr << "XID " << i << " not seen; log: " << log << "\n";
      return 1;
    }
    xid.push_back(us(Clock::now() - t0));
  }
  auto x = stats(xid);
  std::printf("injected XID -> kubelet sees Unhealthy (us, 100)  p50 %.1f  p99 %.1f  max %.1f\n", x.p50, x.p99, x.max);

  auto end = proc_status(pid);
  std::printf("final: RSS %.1f MiB, threads %ld\n", end.rss_kib / 1024.0, end.threads);

  auto t0 = Clock::now();
  ::kill(pid, SIGTERM);
  int rc = wait_exit(pid, 5s);
  std::printf("SIGTERM -> exit %d in %.2f ms\n", rc, us(Clock::now() - t0) / 1000.0);
  sim.stop();
  std::error_code ec;
  fs::remove_all(tmp, ec);
  return rc == 0 ? 0 : 1;
}
