// Lifecycle benchmark (issue 14): what `kgpu plugin` costs around the request path. It starts the
// real binary on the fake NVML (a fixture node generated from the fleet) against the in-process
// kubelet simulator, which holds ListAndWatch streams and reads them as a kubelet does, over real
// unix sockets, and prints median / min / max over --launches launches of:
//   launch -> Register      t0 right before posix_spawn -> the simulator's Register handler ran (its
//                           registration timestamp; the first resource when the node has several, and
//                           then also a row for the last one, from the second launch on).
//   kubelet restart         (3 per launch) the simulator restarts: streams closed, every socket in the
//                           device-plugin directory deleted, kubelet.sock bound again. Two figures
//                           (to the last resource's Register when there are several):
//                           kubelet.sock created (IN_CREATE, seen by an inotify watch in this process,
//                           the same event the plugin waits for) -> Register handler ran; and the
//                           simulator's own figure (restart_and_wait: old sockets deleted, just before
//                           kubelet.sock is bound -> Register), the one bench_e2e_plugin prints.
//   SIGTERM -> exit         t0 right before kill(2) -> the process exited (pidfd readable), in each state:
//                           (a) the simulator's streams open and read; (b1) plus a gRPC ListAndWatch
//                           reader that read the first list and stopped (its HTTP/2 window fills);
//                           (b2) plus two raw HTTP/2 peers that never read their socket (the plugin's
//                           write blocks); (c) no kubelet at all (plugin serving, waiting to register).
//                           (b) runs time-slicing with >= 17,000 devices so one list is >= 1 MiB, and a
//                           config change queues a second list on every stream before the signal.
// and, once, on the last launch after its restarts (one kubelet holding its stream, no config file), in a
// window that opens 2 s after the last re-registration:
//   threads (and their names), VmRSS, and over --idle-seconds of idle the context switches of every
//   thread (summed, and per thread so a reader sees which one wakes up) and the CPU time
//   (utime+stime from /proc/PID/stat, clock-tick resolution; also the threads' schedstat on-CPU time).
//
//
// DRA modes (issue 32), against the fake API server in this process (tests/support/fake_api_server.h)
// and the DRA kubelet simulator (src/sim/dra_kubelet_sim.h): `--mode dra` runs `kgpu plugin --dra
// --dra-gpus 0,1,2,3`, both APIs on (GPUs 0-3 published as ResourceSlices, the rest served to the
// kubelet simulator as above); `--mode dra-only` runs DRA alone (KGPU_DEVICE_PLUGIN=false, every GPU
// DRA's). Per launch:
//   launch -> slices complete   t0 right before posix_spawn -> the fake API server stored the write that
//                               made this node's gpu.nvidia.com pool complete (every slice of the pool at
//                               one generation); a second row: -> complete with the Node as their owner.
//   launch -> DRA registered    -> the DRA kubelet simulator's GetInfo and NotifyRegistrationStatus done
//                               (it looks for the registration socket as fast as it can).
//   launch -> Register received (--mode dra) the device-plugin side, as above.
//   NodePrepareResources / NodeUnprepareResources of one claim (first, repeated; unprepare): the DRA
//                               kubelet simulator's round trip, the claim read from the fake API server.
//   SIGTERM -> exit             (a) the kubelet connected (device-plugin streams read, DRA registered, a
//                               claim prepared and unprepared), slices published, the slice watch open;
//                               (b) a slice write hanging at the API server (someone deleted a slice; its
//                               re-create is accepted and never answered); (c) a NodePrepareResources in
//                               flight whose claim read hangs at the API server; (d) no API server
//                               (nothing listens on its port; started with it missing, the signal
//                               sent once its first publication failed, as its log says).
//   and idle threads, RSS and wake-ups as above on the last launch of (a), before its SIGTERM.
//
// How to run:
//   cmake --build build --target kgpu fake_nvml kgpu-fake-nvml-fixture bench_lifecycle
//   build/bench/bench_lifecycle [--mode device-plugin|dra|dra-only] [--binary PATH] [--fleet FLEET.yaml|PATH]
//                               [--launches N] [--idle-seconds S] [--folder-watch yes|no]
// Throughout, unless --folder-watch no, a second process holds an inotify watch on the device-plugin
// folder as the kubelet's device manager does (fsnotify): an exit that releases inotify instances
// waits for fsnotify grace periods, which are slow while another fsnotify user is active (issue 40).
// "exec (posix_spawn returned) -> Register received" leaves the spawn out: glibc's posix_spawn
// returns once the child has exec'd kgpu.
// Defaults: this build's kgpu, tests/fixtures/fleets/dgx-a100.yaml, 10 launches, 60 s idle. The fake NVML
// and the fixture generator always come from this build, so `--binary /old/checkout/build/src/cli/kgpu`
// measures an older kgpu on the same node. The plugin inherits this process's environment, so settings
// by variable apply (MIG_STRATEGY=mixed with --fleet a100-mig-mixed.yaml registers several resources).
// Takes about 30 s plus the idle period. Prints a Markdown table and one line per single figure, to
// paste into an issue note. Exit status 1 when a step failed or the plugin did not exit cleanly (0) on
// SIGTERM; the temporary folder with its log is then kept.
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "proc_sample.h"
#include "child_process.h"
#include "sim/dra_kubelet_sim.h"
#include "sim/kubelet_sim.h"
#include "sim/sim_steps.h"
#include "support/fake_api_server.h"
#include "support/stuck_grpc_peer.h"

extern char** environ;

namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;
const std::string kGpu = "nvidia.com/gpu";
constexpr const char* kNode = "node-1";
constexpr const char* kDraDriver = "gpu.nvidia.com";
constexpr int kRestartsPerLaunch = 3;
constexpr auto kIdleSettle = std::chrono::seconds(2);
constexpr size_t kLargeListDevices = 17000;  // >= 1 MiB of ListAndWatchResponse (~63 bytes a device)

double ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

enum class Mode { DevicePlugin, Dra, DraOnly };

struct Options {
  Mode mode = Mode::DevicePlugin;
  std::string binary = KGPU_BINARY;
  std::string fleet = std::string(KGPU_FIXTURES_DIR) + "/fleets/dgx-a100.yaml";
  int launches = 10;
  int idle_seconds = 60;
  bool folder_watch = true;  // a second process watching the device-plugin folder, as the kubelet
};

std::optional<Options> parse_options(int argc, char** argv) {
  Options o;
  auto number = [](const std::string& text, int min) -> std::optional<int> {
    try {
      size_t used = 0;
      int v = std::stoi(text, &used);
      if (used == text.size() && v >= min) return v;
    } catch (const std::exception&) {
    }
    return std::nullopt;
  };
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (i + 1 >= argc) {
      std::cerr << "option " << a << " needs a value\n";
      return std::nullopt;
    }
    std::string v = argv[++i];
    if (a == "--mode") {
      if (v == "device-plugin") {
        o.mode = Mode::DevicePlugin;
      } else if (v == "dra") {
        o.mode = Mode::Dra;
      } else if (v == "dra-only") {
        o.mode = Mode::DraOnly;
      } else {
        std::cerr << "--mode is device-plugin, dra or dra-only, got \"" << v << "\"\n";
        return std::nullopt;
      }
    } else if (a == "--folder-watch") {
      if (v != "yes" && v != "no") {
        std::cerr << "--folder-watch is yes or no, got \"" << v << "\"\n";
        return std::nullopt;
      }
      o.folder_watch = v == "yes";
    } else if (a == "--binary") {
      o.binary = v;
    } else if (a == "--fleet") {
      o.fleet = v.find('/') == std::string::npos ? std::string(KGPU_FIXTURES_DIR) + "/fleets/" + v : v;
    } else if (a == "--launches" || a == "--idle-seconds") {
      auto n = number(v, a == "--launches" ? 1 : 0);
      if (!n) {
        std::cerr << a << " needs a whole number" << (a == "--launches" ? " >= 1" : " >= 0") << ", got \"" << v
                  << "\"\n";
        return std::nullopt;
      }
      (a == "--launches" ? o.launches : o.idle_seconds) = *n;
    } else {
      std::cerr << "unknown option " << a
                << "\nusage: bench_lifecycle [--mode device-plugin|dra|dra-only] [--binary PATH] [--fleet FLEET] "
                   "[--launches N] [--idle-seconds S] [--folder-watch yes|no]\n";
      return std::nullopt;
    }
  }
  if (::access(o.binary.c_str(), X_OK) != 0) {
    std::cerr << "--binary " << o.binary << " is not an executable file\n";
    return std::nullopt;
  }
  if (!fs::is_regular_file(o.fleet)) {
    std::cerr << "--fleet " << o.fleet << " is not a file\n";
    return std::nullopt;
  }
  return o;
}

using kgpu::bench::Child;

struct Exit {
  double ms = 0;
  int code = 0;
};
Exit sigterm_and_wait(Child& child) {
  auto t0 = Clock::now();
  ::kill(child.pid(), SIGTERM);
  int code = child.wait_exit(20s);
  return {ms(Clock::now() - t0), code};
}

// Records when a matching name appears in a folder (IN_CREATE, or IN_MOVED_TO for a socket bound
// elsewhere and renamed into place), from a thread blocked in poll: the same notification the
// plugin waits for. The thread wakes only on events in that folder and on the destructor's eventfd.
class CreationWatch {
 public:
  CreationWatch(std::string dir, std::function<bool(const std::string& path)> match)
      : dir_(std::move(dir)), match_(std::move(match)) {
    inotify_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
    stop_ = ::eventfd(0, EFD_CLOEXEC);
    ok_ = inotify_ >= 0 && stop_ >= 0 && ::inotify_add_watch(inotify_, dir_.c_str(), IN_CREATE | IN_MOVED_TO) >= 0;
    if (ok_) thread_ = std::thread([this] { run(); });
  }
  ~CreationWatch() {
    uint64_t one = 1;
    if (stop_ >= 0 && ::write(stop_, &one, sizeof one) < 0) std::perror("eventfd");
    if (thread_.joinable()) thread_.join();
    if (inotify_ >= 0) ::close(inotify_);
    if (stop_ >= 0) ::close(stop_);
  }
  CreationWatch(const CreationWatch&) = delete;
  CreationWatch& operator=(const CreationWatch&) = delete;

  bool ok() const { return ok_; }
  int count() const {
    std::lock_guard lock(mu_);
    return count_;
  }
  // The time of the latest creation once more than `seen` were recorded; nullopt after `timeout`.
  std::optional<Clock::time_point> wait_beyond(int seen, std::chrono::milliseconds timeout) const {
    std::unique_lock lock(mu_);
    if (!cv_.wait_for(lock, timeout, [&] { return count_ > seen; })) return std::nullopt;
    return last_;
  }

 private:
  void run() {
    alignas(inotify_event) char buf[4096];
    for (;;) {
      pollfd p[2] = {{inotify_, POLLIN, 0}, {stop_, POLLIN, 0}};
      if (::poll(p, 2, -1) < 0 || (p[1].revents & POLLIN)) return;
      auto now = Clock::now();
      ssize_t n = ::read(inotify_, buf, sizeof buf);
      for (ssize_t off = 0; off < n;) {
        auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
        if (ev->len > 0 && match_(dir_ + "/" + ev->name)) {
          std::lock_guard lock(mu_);
          ++count_;
          last_ = now;
          cv_.notify_all();
        }
        off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      }
    }
  }
  std::string dir_;
  std::function<bool(const std::string&)> match_;
  int inotify_ = -1, stop_ = -1;
  bool ok_ = false;
  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  int count_ = 0;
  Clock::time_point last_{};
  std::thread thread_;
};

// A second process holding an inotify watch on the device-plugin folder, as the kubelet's device
// manager does (fsnotify, with its mask): the fsnotify state kgpu's exit meets on a node (issue 40,
// item 2: releasing an inotify instance waits for an fsnotify grace period, slower while another
// fsnotify user is active). It reads its events and ends with this process (PDEATHSIG) or the
// destructor. Forked before this process starts threads: the child calls only async-signal-safe
// functions.
class FolderWatcher {
 public:
  explicit FolderWatcher(const std::string& dir) {
    int ready[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) return;
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      const int fd = ::inotify_init1(IN_CLOEXEC);
      // github.com/fsnotify/fsnotify's Add (kubelet 1.19 .. 1.34).
      const uint32_t mask = IN_MOVED_TO | IN_MOVED_FROM | IN_CREATE | IN_ATTRIB | IN_MODIFY | IN_MOVE_SELF |
                            IN_DELETE | IN_DELETE_SELF;
      const char ok = fd >= 0 && ::inotify_add_watch(fd, dir.c_str(), mask) >= 0 ? 'y' : 'n';
      if (::write(ready[1], &ok, 1) != 1 || ok != 'y') ::_exit(1);
      alignas(inotify_event) char buf[4096];
      while (::read(fd, buf, sizeof buf) > 0 || errno == EINTR) {
      }
      ::_exit(0);
    }
    ::close(ready[1]);
    char ok = 'n';
    ok_ = pid_ > 0 && ::read(ready[0], &ok, 1) == 1 && ok == 'y';
    ::close(ready[0]);
  }
  ~FolderWatcher() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  FolderWatcher(const FolderWatcher&) = delete;
  FolderWatcher& operator=(const FolderWatcher&) = delete;
  bool ok() const { return ok_; }

 private:
  pid_t pid_ = -1;
  bool ok_ = false;
};

bool is_socket(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

void replace_file(const std::string& path, const std::string& content) {
  std::string tmp = path + ".new";
  std::ofstream(tmp) << content;
  fs::rename(tmp, path);
}

std::string time_slicing_config(size_t replicas) {
  return "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: nvidia.com/gpu\n      replicas: " +
         std::to_string(replicas) + "\n";
}

struct Figure {
  std::string label;
  std::vector<double> values;
};

void print_row(const Figure& f) {
  if (f.values.empty()) {
    std::printf("| %s | not measured | | |\n", f.label.c_str());
    return;
  }
  auto v = f.values;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  double median = n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
  std::printf("| %s | %.2f | %.2f | %.2f |\n", f.label.c_str(), median, v.front(), v.back());
}

// Everything registered since `t0` streams and has sent its first list, and every resource in
// `expected` registered again; the first Register's time, or nullopt when none within `timeout`.
std::optional<Clock::time_point> wait_registered_since(kgpu::sim::KubeletSim& sim, Clock::time_point t0,
                                                       const std::set<std::string>& expected,
                                                       std::chrono::milliseconds timeout) {
  bool ok = sim.wait_for(
      [&](const kgpu::sim::Snapshot& s) {
        bool any = false;
        for (const auto& [name, r] : s.resources) {
          if (r.last_registered > t0) {
            if (!r.connected || r.last_update < r.last_registered) return false;
            any = true;
          } else if (expected.count(name)) {
            return false;
          }
        }
        return any;
      },
      timeout);
  if (!ok) return std::nullopt;
  std::optional<Clock::time_point> first;
  for (const auto& [name, r] : sim.snapshot().resources)
    if (r.last_registered > t0 && (!first || r.last_registered < *first)) first = r.last_registered;
  return first;
}

class Bench {
 public:
  explicit Bench(Options o) : o_(std::move(o)) {}

  int run() {
    char templ[] = "/tmp/kgpu-lifecycle-XXXXXX";
    if (!::mkdtemp(templ)) {
      fail("cannot create a temporary folder");
      return 1;
    }
    tmp_ = templ;
    plugin_dir_ = tmp_ + "/dp";
    alone_dir_ = tmp_ + "/alone";
    fs::create_directories(plugin_dir_);
    fs::create_directories(alone_dir_);
    log_ = tmp_ + "/plugin.log";
    std::string nvml_dir = KGPU_FAKE_NVML_DIR;
    Child gen({nvml_dir + "/kgpu-fake-nvml-fixture", o_.fleet, tmp_ + "/node"}, {}, tmp_ + "/fixture.log");
    if (!gen.started() || gen.wait_exit(30s) != 0) {
      fail("the fixture generator failed: " + tmp_ + "/fixture.log");
      return 1;
    }
    env_ = {"LD_LIBRARY_PATH=" + nvml_dir, "KGPU_FAKE_NVML_FLEET=" + o_.fleet};
    if (o_.mode != Mode::DevicePlugin) return run_dra();
    std::optional<FolderWatcher> watcher;
    if (o_.folder_watch && !watcher.emplace(plugin_dir_).ok()) return fail("inotify on " + plugin_dir_), 1;

    kgpu::sim::KubeletSim sim(plugin_dir_);
    if (auto st = sim.start(); !st) {
      fail("kubelet simulator: " + st.error().message);
      return 1;
    }
    if (!launches_with_kubelet(sim)) return 1;
    if (!launches_with_unread_streams(sim, false) || !launches_with_unread_streams(sim, true)) return 1;
    sim.stop();
    if (!launches_without_kubelet()) return 1;
    print();
    if (!exit_codes_.empty()) {
      fail("the plugin did not exit cleanly on SIGTERM");
      return 1;
    }
    std::error_code ec;
    fs::remove_all(tmp_, ec);
    return 0;
  }

 private:
  std::vector<std::string> plugin_argv(const std::string& dir, const std::string& config_file) const {
    std::vector<std::string> argv = {o_.binary,     "plugin",        "--kubelet-socket", dir + "/kubelet.sock",
                                     "--log-level", "warn",          "--sysfs-root",     tmp_ + "/node/sys",
                                     "--proc-root", tmp_ + "/node/proc", "--dev-root",   tmp_ + "/node"};
    if (!config_file.empty()) argv.insert(argv.end(), {"--config-file", config_file});
    return argv;
  }

  // Says what failed (the temporary folder is kept for its logs); false, for `return fail(...)`.
  bool fail(const std::string& what) const {
    std::cerr << "bench_lifecycle: " << what << (log_.empty() ? "" : "; plugin log: " + log_) << "\n";
    return false;
  }

  void record_exit(Figure& f, const Exit& e) {
    f.values.push_back(e.ms);
    if (e.code != 0) exit_codes_.push_back(f.label + ": exit " + std::to_string(e.code));
  }

  // Launch -> Register, kubelet restarts, idle (last launch), SIGTERM with the kubelet's streams read.
  bool launches_with_kubelet(kgpu::sim::KubeletSim& sim) {
    CreationWatch kubelet_sock(plugin_dir_,
                               [](const std::string& p) { return fs::path(p).filename() == "kubelet.sock"; });
    if (!kubelet_sock.ok()) return fail("inotify on " + plugin_dir_);
    std::set<std::string> expected;
    for (int i = 0; i < o_.launches; ++i) {
      auto t0 = Clock::now();
      Child plugin(plugin_argv(plugin_dir_, ""), env_, log_);
      const auto exec_done = Clock::now();  // posix_spawn returns once the child has exec'd (vfork)
      if (!plugin.started()) return fail("cannot start " + o_.binary);
      auto registered = wait_registered_since(sim, t0, expected, 30s);
      if (!registered) return fail("the plugin did not register within 30 s");
      launch_.values.push_back(ms(*registered - t0));
      launch_exec_.values.push_back(ms(*registered - exec_done));
      // With several resources, also the last Register: from the second launch on, once every
      // resource the first launch showed is known to wait for.
      if (i > 0 && expected.size() > 1) {
        Clock::time_point last = *registered;
        for (const auto& [name, r] : sim.snapshot().resources) last = std::max(last, r.last_registered);
        launch_all_.values.push_back(ms(last - t0));
      }
      for (const auto& [name, r] : sim.snapshot().resources) expected.insert(name);

      for (int r = 0; r < kRestartsPerLaunch; ++r) {
        int seen = kubelet_sock.count();
        auto begun = Clock::now();
        auto took = kgpu::sim::restart_and_wait(sim, 10s);
        if (!took) return fail("kubelet restart: " + took.error().message);
        restart_.values.push_back(static_cast<double>(took->count()) / 1000.0);
        auto created = kubelet_sock.wait_beyond(seen, 5s);
        if (!created) return fail("no inotify event for the re-created kubelet.sock");
        // Every resource registered again and its new list arrived. (Not "since *created": this
        // process's watch thread may wake after the plugin did.)
        auto after = wait_registered_since(sim, begun, expected, 10s);
        if (!after) return fail("the plugin did not stream again after a kubelet restart");
        Clock::time_point last = *after;
        for (const auto& [name, res] : sim.snapshot().resources) last = std::max(last, res.last_registered);
        socket_created_.values.push_back(ms(last - *created));
      }

      if (i == o_.launches - 1) measure_idle(plugin.pid(), sim);
      record_exit(sigterm_read_, sigterm_and_wait(plugin));
    }
    return true;
  }

  void measure_idle(pid_t pid, kgpu::sim::KubeletSim& sim) {
    // The window opens 2 s after the last re-registration's list arrived: what the daemon does for
    // months, not the tail of the restart (a timer that keeps firing shows up either way).
    std::this_thread::sleep_for(kIdleSettle);
    auto before = kgpu::bench::sample_process(pid);
    std::this_thread::sleep_for(std::chrono::seconds(o_.idle_seconds));  // the measured idle period itself
    auto after = kgpu::bench::sample_process(pid);
    idle_before_ = before;
    idle_after_ = after;
    auto snapshot = sim.snapshot();
    if (const auto* r = snapshot.find(kGpu)) gpus_ = r->devices.size();
    for (const auto& [name, r] : snapshot.resources)
      resources_ += (resources_.empty() ? "" : ", ") + std::to_string(r.devices.size()) + " x " + name;
  }

  // SIGTERM with the kubelet's stream read and, on a list of >= 1 MiB, either a gRPC reader that
  // stopped reading (`raw` false) or two raw peers that never read their socket (`raw` true).
  bool launches_with_unread_streams(kgpu::sim::KubeletSim& sim, bool raw) {
    Figure& figure = raw ? sigterm_raw_ : sigterm_grpc_;
    if (gpus_ == 0) return true;  // no nvidia.com/gpu on this fleet: not measured
    size_t replicas = std::min<size_t>(9999, (kLargeListDevices + gpus_ - 1) / gpus_);
    std::string config = tmp_ + "/config.yaml";
    auto devices_are = [&](size_t n, Clock::time_point since) {
      return sim.wait_for(
          [&](const kgpu::sim::Snapshot& s) {
            const auto* r = s.find(kGpu);
            return r && r->connected && r->last_registered > since && r->last_update > since && r->devices.size() == n;
          },
          60s);
    };
    for (int i = 0; i < o_.launches; ++i) {
      replace_file(config, time_slicing_config(replicas));
      auto t0 = Clock::now();
      Child plugin(plugin_argv(plugin_dir_, config), env_, log_);
      if (!plugin.started()) return fail("cannot start " + o_.binary);
      if (!devices_are(gpus_ * replicas, t0))
        return fail("no list of " + std::to_string(gpus_ * replicas) + " devices");
      std::string socket = plugin_dir_ + "/" + sim.snapshot().find(kGpu)->endpoint;
      large_devices_ = gpus_ * (replicas + 1);

      std::unique_ptr<v1beta1::DevicePlugin::Stub> stub;
      grpc::ClientContext ctx;
      std::unique_ptr<grpc::ClientReader<v1beta1::ListAndWatchResponse>> reader;
      std::vector<std::unique_ptr<kgpu::test::StuckPeer>> peers;
      if (raw) {
        for (int p = 0; p < 2; ++p) {
          peers.push_back(std::make_unique<kgpu::test::StuckPeer>(socket));
          if (!peers.back()->connected() || !peers.back()->wait_readable(10000))
            return fail("a raw ListAndWatch peer got nothing from " + socket);
        }
      } else {
        auto channel = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
        stub = v1beta1::DevicePlugin::NewStub(channel);
        reader = stub->ListAndWatch(&ctx, v1beta1::Empty());
        v1beta1::ListAndWatchResponse first;
        if (!reader->Read(&first)) return fail("a gRPC ListAndWatch reader got no list");
        list_bytes_ = first.ByteSizeLong();  // read once, never again
      }
      // A new list for every stream (a config change): the unread ones cannot take it.
      auto changed = Clock::now();
      replace_file(config, time_slicing_config(replicas + 1));
      if (!sim.wait_for(
              [&](const kgpu::sim::Snapshot& s) {
                const auto* r = s.find(kGpu);
                return r && r->last_update > changed && r->devices.size() == large_devices_;
              },
              60s))
        return fail("the config change never reached the kubelet's stream");
      record_exit(figure, sigterm_and_wait(plugin));
      ctx.TryCancel();
    }
    return true;
  }

  // ---- DRA modes ----

  int run_dra() {
    const std::string root = tmp_ + "/kubelet";  // the kubelet root: device-plugins/, plugins/, plugins_registry/
    plugin_dir_ = root + "/device-plugins";
    cdi_dir_ = tmp_ + "/cdi";
    for (const auto& d : {plugin_dir_, root + "/plugins_registry", cdi_dir_}) fs::create_directories(d);
    std::optional<FolderWatcher> watcher;
    if (o_.folder_watch && !watcher.emplace(plugin_dir_).ok()) return fail("inotify on " + plugin_dir_), 1;
    kgpu::test::FakeApiServer api(kNode, {});
    if (!api.bound()) return fail("the fake API server cannot listen"), 1;
    kgpu::sim::KubeletSim sim(plugin_dir_);
    if (auto st = sim.start(); !st) return fail("kubelet simulator: " + st.error().message), 1;
    for (int i = 0; i < o_.launches; ++i) {
      if (!dra_launch(api, sim, root, DraState::Connected, i == o_.launches - 1)) return 1;
      if (!dra_launch(api, sim, root, DraState::SliceWriteHangs, false)) return 1;
      if (!dra_launch(api, sim, root, DraState::PrepareInFlight, false)) return 1;
      if (!dra_launch(api, sim, root, DraState::NoApiServer, false)) return 1;
    }
    sim.stop();
    print_dra();
    if (!exit_codes_.empty()) return fail("the plugin did not exit cleanly on SIGTERM"), 1;
    std::error_code ec;
    fs::remove_all(tmp_, ec);
    return 0;
  }

  enum class DraState { Connected, SliceWriteHangs, PrepareInFlight, NoApiServer };

  std::vector<std::string> dra_argv() const {
    auto argv = plugin_argv(plugin_dir_, "");
    argv.insert(argv.end(), {"--dra", "--cdi-spec-dir", cdi_dir_});
    if (o_.mode == Mode::Dra) argv.insert(argv.end(), {"--dra-gpus", "0,1,2,3"});
    return argv;
  }

  // This node's pool of gpu.nvidia.com in `slices`: complete when every slice of it is there at one
  // generation; `owned` also asks for the Node as every slice's owner.
  static bool pool_complete(const std::map<std::string, nlohmann::json>& slices, const std::string& node_uid,
                            bool owned) {
    int64_t count = -1, generation = -1;
    size_t seen = 0;
    for (const auto& [name, slice] : slices) {
      const auto& spec = slice["spec"];
      if (spec.value("driver", "") != kDraDriver || spec.value("nodeName", "") != kNode) continue;
      const auto& pool = spec["pool"];
      const int64_t g = pool.value("generation", int64_t{-1}), c = pool.value("resourceSliceCount", int64_t{-1});
      if (seen > 0 && (g != generation || c != count)) return false;
      generation = g;
      count = c;
      ++seen;
      if (owned) {
        const auto& refs = slice["metadata"].value("ownerReferences", nlohmann::json::array());
        if (refs.empty() || refs[0].value("uid", "") != node_uid || refs[0].value("kind", "") != "Node") return false;
      }
    }
    return seen > 0 && static_cast<int64_t>(seen) == count;
  }

  // When the pool first became complete (owned or not), replaying the fake's history from `since`.
  static std::optional<Clock::time_point> first_complete(const kgpu::test::FakeApiServer& api, Clock::time_point since,
                                                         bool owned) {
    std::map<std::string, nlohmann::json> slices;
    const std::string node_uid = api.node_uid();
    for (const auto& change : api.slice_history()) {
      if (change.type == "DELETED")
        slices.erase(change.name);
      else
        slices[change.name] = change.object;
      if (change.at >= since && pool_complete(slices, node_uid, owned)) return change.at;
    }
    return std::nullopt;
  }

  bool dra_launch(kgpu::test::FakeApiServer& api, kgpu::sim::KubeletSim& sim, const std::string& root, DraState state,
                  bool measure_idle_now) {
    // (d): an address where nothing listens. Otherwise the fake, with this node's slices deleted so
    // that every launch publishes them afresh.
    const int dead_port = kgpu::test::FakeApiServer::free_port();
    const std::string api_url = state == DraState::NoApiServer ? "http://127.0.0.1:" + std::to_string(dead_port)
                                                               : api.url();
    for (const auto& [name, slice] : api.slices()) api.remove_slice(name);
    std::vector<std::string> env = env_;
    env.insert(env.end(), {"NODE_NAME=" + std::string(kNode), "KGPU_KUBE_API=" + api_url});
    if (o_.mode == Mode::DraOnly) env.push_back("KGPU_DEVICE_PLUGIN=false");
    kgpu::sim::DraKubeletSim kubelet(root, 34);

    const int watches_before = api.slice_counts().watches;
    std::error_code ec;
    const uintmax_t log_offset = fs::exists(log_) ? fs::file_size(log_, ec) : 0;
    const auto t0 = Clock::now();
    Child plugin(dra_argv(), env, log_);
    const auto exec_done = Clock::now();
    if (!plugin.started()) return fail("cannot start " + o_.binary);
    auto registered = kubelet.wait_for_plugin(30s);
    if (!registered) return fail("the DRA plugin did not register: " + registered.error().message);
    const auto dra_registered = Clock::now();
    if (state == DraState::NoApiServer) {
      // Started through its first publication, which failed: the slice writer's warning is logged.
      if (!wait_logged(log_offset, "DRA slices:", 30s)) return fail("no failed publication was logged");
      record_exit(dra_sigterm_no_api_, sigterm_and_wait(plugin));
      return true;
    }
    dra_registered_.values.push_back(ms(dra_registered - t0));
    if (!api.wait_slices([](const auto& slices) { return pool_complete(slices, "", false); }, 30s))
      return fail("the slices were not published within 30 s");
    if (auto at = first_complete(api, t0, false)) dra_slices_.values.push_back(ms(*at - t0));
    if (o_.mode == Mode::Dra) {
      auto dp = wait_registered_since(sim, t0, {}, 30s);
      if (!dp) return fail("the device-plugin side did not register within 30 s");
      launch_.values.push_back(ms(*dp - t0));
      launch_exec_.values.push_back(ms(*dp - exec_done));
    }
    // The slice watch is open: kgpu follows its slices.
    if (!api.wait_slice_counts([&](const auto& c) { return c.watches > watches_before; }, 30s))
      return fail("kgpu never watched its slices");

    std::string device;
    for (const auto& [name, slice] : api.slices())
      if (slice["spec"].value("driver", "") == kDraDriver && !slice["spec"]["devices"].empty())
        device = slice["spec"]["devices"][0].value("name", "");
    if (device.empty()) return fail("no device published");
    const std::string uid = "claim-" + std::to_string(++claims_);
    api.put_resource_claim(claim_json(uid, device));
    const kgpu::sim::DraClaim claim{"team-a", "train", uid};

    if (state == DraState::PrepareInFlight) {
      const size_t reads = api.claim_reads().size();
      api.stall_claim_reads(true);
      std::thread caller([&] { (void)kubelet.prepare(kDraDriver, {claim}, 30s); });
      const bool in_flight = api.wait_claim_reads(reads + 1, 30s);
      if (in_flight) record_exit(dra_sigterm_prepare_, sigterm_and_wait(plugin));
      api.stall_claim_reads(false);
      caller.join();
      return in_flight || fail("the claim was never read");
    }

    for (int round = 0; round < 2; ++round) {
      auto begun = Clock::now();
      auto prepared = kubelet.prepare(kDraDriver, {claim}, 30s);
      if (!prepared || !prepared->count(uid) || !prepared->at(uid).error.empty())
        return fail("NodePrepareResources failed: " +
                    (!prepared ? prepared.error().message
                               : prepared->count(uid) ? prepared->at(uid).error : std::string("no answer")));
      (round == 0 ? dra_prepare_ : dra_prepare_again_).values.push_back(ms(Clock::now() - begun));
    }
    auto begun = Clock::now();
    auto unprepared = kubelet.unprepare(kDraDriver, {claim}, 30s);
    if (!unprepared || !unprepared->count(uid) || !unprepared->at(uid).empty())
      return fail("NodeUnprepareResources failed");
    dra_unprepare_.values.push_back(ms(Clock::now() - begun));
    ++dra_launches_;
    if (auto at = first_complete(api, t0, true)) {
      ++dra_owned_;
      dra_slices_owned_.values.push_back(ms(*at - t0));
    }

    if (state == DraState::SliceWriteHangs) {
      // Someone deletes a slice: kgpu's watch sees it and re-creates it; the API server takes the
      // request and never answers.
      api.stall_slice_writes(true);
      const int writes = api.slice_counts().writes();
      std::string victim;
      for (const auto& [name, slice] : api.slices())
        if (slice["spec"].value("driver", "") == kDraDriver) victim = name;
      api.remove_slice(victim);
      const bool hanging = api.wait_slice_writes(writes + 1, 30s);
      if (hanging) record_exit(dra_sigterm_hanging_, sigterm_and_wait(plugin));
      api.stall_slice_writes(false);
      // The held write is answered now (the server stores it): wait for it, so that it does not
      // land in the next launch's window.
      if (hanging) api.wait_slices([&](const auto& slices) { return slices.count(victim) > 0; }, 10s);
      return hanging || fail("kgpu did not put back a deleted slice");
    }
    if (measure_idle_now) measure_idle(plugin.pid(), sim);
    record_exit(dra_sigterm_connected_, sigterm_and_wait(plugin));
    return true;
  }

  // Waits until `text` appears in the plugin's log after `offset` (a bench, not a test: the log is
  // the only outside sign of this state); false after `timeout`.
  bool wait_logged(uintmax_t offset, const std::string& text, std::chrono::milliseconds timeout) const {
    const auto end = Clock::now() + timeout;
    do {
      std::ifstream in(log_);
      in.seekg(static_cast<std::streamoff>(offset));
      std::string rest((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      if (rest.find(text) != std::string::npos) return true;
      std::this_thread::sleep_for(1ms);
    } while (Clock::now() < end);
    return false;
  }

  static nlohmann::json claim_json(const std::string& uid, const std::string& device) {
    nlohmann::json result = {{"request", "gpu"}, {"driver", kDraDriver}, {"pool", kNode}, {"device", device}};
    return {{"apiVersion", "resource.k8s.io/v1"},
            {"kind", "ResourceClaim"},
            {"metadata", {{"name", "train"}, {"namespace", "team-a"}, {"uid", uid}}},
            {"spec", {{"devices", {{"requests", nlohmann::json::array()}}}}},
            {"status", {{"allocation", {{"devices", {{"results", {result}}, {"config", nlohmann::json::array()}}}}}}}};
  }

  void print_dra() const {
    std::printf("kgpu lifecycle, %s: %s, fleet %s, %d launches per state, %d s idle\n\n",
                o_.mode == Mode::Dra ? "DRA and device-plugin API (--dra --dra-gpus 0,1,2,3)"
                                     : "DRA only (--dra, KGPU_DEVICE_PLUGIN=false)",
                o_.binary.c_str(), fs::path(o_.fleet).filename().c_str(), o_.launches, o_.idle_seconds);
    print_folder_watch();
    std::printf("| figure (ms) | median | min | max |\n|---|---|---|---|\n");
    print_row(dra_slices_);
    print_row(dra_slices_owned_);
    print_row(dra_registered_);
    if (o_.mode == Mode::Dra) {
      print_row(launch_);
      print_row(launch_exec_);
    }
    print_row(dra_prepare_);
    print_row(dra_prepare_again_);
    print_row(dra_unprepare_);
    print_row(dra_sigterm_connected_);
    print_row(dra_sigterm_hanging_);
    print_row(dra_sigterm_prepare_);
    print_row(dra_sigterm_no_api_);
    std::printf("\nslices owned by the Node (ownerReferences) once prepared: %d of %d launches\n", dra_owned_,
                dra_launches_);
    print_idle();
  }

  // SIGTERM with no kubelet: the plugin serves its socket and waits for kubelet.sock.
  bool launches_without_kubelet() {
    for (int i = 0; i < o_.launches; ++i) {
      CreationWatch socket(alone_dir_, [](const std::string& p) {
        return fs::path(p).filename() != "kubelet.sock" && is_socket(p);
      });
      if (!socket.ok()) return fail("inotify on " + alone_dir_);
      Child plugin(plugin_argv(alone_dir_, ""), env_, log_);
      if (!plugin.started()) return fail("cannot start " + o_.binary);
      if (!socket.wait_beyond(0, 30s)) return fail("the plugin never created its socket without a kubelet");
      record_exit(sigterm_alone_, sigterm_and_wait(plugin));
      std::error_code ec;
      for (const auto& e : fs::directory_iterator(alone_dir_, ec)) fs::remove_all(e.path(), ec);
    }
    return true;
  }

  void print() const {
    std::printf("kgpu lifecycle: %s, fleet %s (%s), %d launches, %d s idle\n\n", o_.binary.c_str(),
                fs::path(o_.fleet).filename().c_str(), resources_.c_str(), o_.launches, o_.idle_seconds);
    print_folder_watch();
    std::printf("| figure (ms) | median | min | max |\n|---|---|---|---|\n");
    print_row(launch_);
    print_row(launch_exec_);
    if (!launch_all_.values.empty()) print_row(launch_all_);
    print_row(socket_created_);
    print_row(restart_);
    print_row(sigterm_read_);
    std::string large = std::to_string(large_devices_) + " devices";
    if (list_bytes_ > 0) large += ", " + std::to_string(list_bytes_ / 1024) + " KiB list";
    print_row({sigterm_grpc_.label + " (" + large + ")", sigterm_grpc_.values});
    print_row({sigterm_raw_.label + " (" + large + ")", sigterm_raw_.values});
    print_row(sigterm_alone_);
    print_idle();
  }

  void print_folder_watch() const {
    std::printf("a second process watching the device-plugin folder with inotify (as the kubelet): %s\n\n",
                o_.folder_watch ? "yes" : "no (--folder-watch no)");
  }

  void print_idle() const {
    std::printf("\n");
    if (!idle_after_.ok) {
      std::printf("idle figures: the process was gone\n");
    } else {
      const auto& a = idle_after_;
      const auto& b = idle_before_;
      std::map<std::string, int> names;
      for (const auto& [tid, t] : a.tasks) names[t.name]++;
      std::string list;
      for (const auto& [name, n] : names)
        list += (list.empty() ? "" : ", ") + name + (n > 1 ? " x" + std::to_string(n) : "");
      long switches = a.switches() - b.switches();
      double per10 = o_.idle_seconds > 0 ? 10.0 * static_cast<double>(switches) / o_.idle_seconds : 0;
      std::printf("threads idle: %ld (%s)\n", a.threads, list.c_str());
      std::printf("RSS idle: %.1f MiB\n", static_cast<double>(a.rss_kib) / 1024.0);
      std::printf("context switches over %d s idle, all threads: %ld (%.1f per 10 s)\n", o_.idle_seconds, switches,
                  per10);
      std::printf("CPU over %d s idle: utime+stime %.0f ms; on-CPU by schedstat %.2f ms\n", o_.idle_seconds,
                  a.cpu_ms - b.cpu_ms, static_cast<double>(a.cpu_ns() - b.cpu_ns()) / 1e6);
      // Threads that woke up, one by one; the quiet ones in one group, by name.
      std::string woke, quiet;
      std::map<std::string, int> quiet_names;
      for (const auto& d : kgpu::bench::thread_deltas(b, a)) {
        if (d.switches > 0)
          woke += (woke.empty() ? "" : ", ") + d.name + " " + std::to_string(d.switches);
        else
          quiet_names[d.name + (d.exited ? " (exited)" : "")]++;
      }
      for (const auto& [name, n] : quiet_names)
        quiet += (quiet.empty() ? "" : ", ") + name + (n > 1 ? " x" + std::to_string(n) : "");
      std::printf("context switches per thread over %d s idle: %s; 0: %s\n", o_.idle_seconds,
                  woke.empty() ? "none" : woke.c_str(), quiet.empty() ? "none" : quiet.c_str());
    }
    for (const auto& e : exit_codes_) std::printf("NOT a clean exit: %s\n", e.c_str());
  }

  Options o_;
  std::string tmp_, plugin_dir_, alone_dir_, log_;
  std::vector<std::string> env_;
  size_t gpus_ = 0, large_devices_ = 0, list_bytes_ = 0;
  std::string resources_;  // "8 x nvidia.com/gpu, ..." as the kubelet saw them idle
  Figure launch_{"launch (posix_spawn) -> Register received", {}};
  Figure launch_exec_{"exec (posix_spawn returned) -> Register received", {}};
  Figure launch_all_{"launch (posix_spawn) -> every resource's Register received", {}};
  Figure socket_created_{"kubelet restart: kubelet.sock created (inotify) -> Register received", {}};
  Figure restart_{"kubelet restart: old sockets deleted -> Register received", {}};
  Figure sigterm_read_{"SIGTERM -> exit, kubelet streams open and read", {}};
  Figure sigterm_grpc_{"SIGTERM -> exit, + a gRPC reader that stopped reading", {}};
  Figure sigterm_raw_{"SIGTERM -> exit, + 2 peers that never read their socket", {}};
  Figure sigterm_alone_{"SIGTERM -> exit, no kubelet (waiting to register)", {}};
  std::string cdi_dir_;
  int claims_ = 0, dra_launches_ = 0, dra_owned_ = 0;
  Figure dra_slices_{"launch (posix_spawn) -> slices complete at the API server", {}};
  Figure dra_slices_owned_{"launch (posix_spawn) -> slices complete and owned by the Node", {}};
  Figure dra_registered_{"launch (posix_spawn) -> DRA plugin registered (GetInfo, NotifyRegistrationStatus)", {}};
  Figure dra_prepare_{"NodePrepareResources, 1 claim", {}};
  Figure dra_prepare_again_{"NodePrepareResources, the same claim again", {}};
  Figure dra_unprepare_{"NodeUnprepareResources, 1 claim", {}};
  Figure dra_sigterm_connected_{"SIGTERM -> exit, kubelet connected, slices published, slice watch open", {}};
  Figure dra_sigterm_hanging_{"SIGTERM -> exit, a slice write hanging at the API server", {}};
  Figure dra_sigterm_prepare_{"SIGTERM -> exit, NodePrepareResources in flight (claim read hanging)", {}};
  Figure dra_sigterm_no_api_{"SIGTERM -> exit, no API server (nothing listening)", {}};
  kgpu::bench::ProcSample idle_before_, idle_after_;
  std::vector<std::string> exit_codes_;
};

}  // namespace

int main(int argc, char** argv) {
  auto options = parse_options(argc, argv);
  if (!options) return 2;
  return Bench(std::move(*options)).run();
}
