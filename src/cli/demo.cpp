// `kgpu demo`: the README's first command. Runs `kgpu plugin` (this executable) on a simulated DGX
// A100 node (the fake libnvidia-ml.so.1 loaded through LD_LIBRARY_PATH) against the in-process
// kubelet simulator in a temp dir, allocates GPUs for two example pods, shows what each container
// gets, simulates a kubelet restart, shows the re-registration and stops the plugin.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <optional>
#include <sstream>

#include "cli/command.h"
#include "sim/kubelet_sim.h"
#include "sim/sim_steps.h"
#include "core/strings.h"

extern char** environ;

namespace {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct DemoArgs {
  std::string fake_nvml_dir;  // folder holding libnvidia-ml.so.1 (and kgpu-fake-nvml-fixture)
  std::string fleet;          // fleet YAML
  bool keep = false;          // keep the temp dir
  int timeout_s = 30;
};

std::string self_exe() {
  std::error_code ec;
  auto p = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string() : p.string();
}

std::string env_or(const char* name, const std::string& fallback) {
  const char* v = std::getenv(name);
  return v && *v ? v : fallback;
}

// The source tree: walk up from the executable to the build dir's CMakeCache.txt and read
// kgpu_SOURCE_DIR from it; else the first ancestor holding tests/fixtures/fleets.
std::string find_source_dir(const fs::path& exe) {
  for (fs::path dir = exe.parent_path(); !dir.empty() && dir != dir.root_path(); dir = dir.parent_path()) {
    std::ifstream cache(dir / "CMakeCache.txt");
    for (std::string line; std::getline(cache, line);)
      if (line.rfind("kgpu_SOURCE_DIR:STATIC=", 0) == 0) return line.substr(line.find('=') + 1);
    if (fs::exists(dir / "tests/fixtures/fleets")) return dir.string();
  }
  return "";
}

std::string ms(Clock::duration d) {
  std::ostringstream o;
  o << std::fixed << std::setprecision(2) << std::chrono::duration<double, std::milli>(d).count() << " ms";
  return o.str();
}

// A child process with its output in a log file; killed if still running on destruction.
class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env, const std::string& log) {
    std::vector<std::string> env_strings;
    for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
    env_strings.insert(env_strings.end(), extra_env.begin(), extra_env.end());
    std::vector<char*> args, envp;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    for (auto& e : env_strings) envp.push_back(e.data());
    envp.push_back(nullptr);
    const int out = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const pid_t parent = ::getpid();
    pid_ = ::fork();
    if (pid_ == 0) {  // only async-signal-safe calls until execve: the demo has threads
      // The child dies with the demo (`kgpu demo | head -3`, Ctrl-C, a kill): no orphaned plugin.
      if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(127);
      sigset_t none;
      sigemptyset(&none);
      ::sigprocmask(SIG_SETMASK, &none, nullptr);
      ::signal(SIGPIPE, SIG_DFL);  // the demo ignores it; the child gets the default back
      if (out < 0 || ::dup2(out, 1) < 0 || ::dup2(out, 2) < 0) ::_exit(127);
      ::execve(args[0], args.data(), envp.data());
      ::_exit(127);
    }
    if (out >= 0) ::close(out);
  }
  ~Child() {
    if (pid_ > 0 && !status_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }
  // Exit status (128 + signal when killed) or nullopt on timeout.
  std::optional<int> wait(std::chrono::milliseconds timeout) {
    if (status_) return status_;
    int fd = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
    if (fd >= 0) {
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, static_cast<int>(timeout.count()));
      ::close(fd);
    }
    int st = 0;
    if (::waitpid(pid_, &st, fd >= 0 ? WNOHANG : 0) != pid_) return std::nullopt;
    status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    return status_;
  }
  bool running() {
    if (status_) return false;
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) == pid_) {
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      return false;
    }
    return true;
  }

 private:
  pid_t pid_ = -1;
  std::optional<int> status_;
};

// The first folder holding `file`, or the last candidate (named in the error) when none does.
std::string first_holding(const std::vector<std::string>& dirs, const std::string& file) {
  for (const auto& d : dirs)
    if (fs::exists(fs::path(d) / file)) return d;
  return dirs.back();
}

void show_log(const std::string& log) {
  std::ifstream in(log);
  std::cout << "---- plugin log (" << log << ") ----\n" << in.rdbuf() << "\n----\n";
}

int run_demo(const DemoArgs& args) {
  // `kgpu demo | head -3`: once the reader is gone, writes fail instead of killing the demo, so it
  // still stops its plugin and removes its temp folder (output after that is lost, as it should be).
  ::signal(SIGPIPE, SIG_IGN);
  std::string exe = self_exe();
  std::string source = find_source_dir(exe);
  // Without a flag or variable: next to the binary (a release unpacked into one folder), then the
  // build tree's tests/fake-nvml (build/src/cli/kgpu).
  const fs::path exe_dir = fs::path(exe).parent_path();
  const std::string build_dir = (exe_dir / "../../tests/fake-nvml").lexically_normal().string();
  std::string nvml_dir = !args.fake_nvml_dir.empty()
                             ? args.fake_nvml_dir
                             : env_or("KGPU_FAKE_NVML_DIR", first_holding({exe_dir.string(), build_dir}, "libnvidia-ml.so.1"));
  // The plugin's own variable first, so that one `export` serves `kgpu demo` and `kgpu plugin` alike;
  // then the source tree's fleet, then one next to the binary.
  std::string default_fleet = source.empty() ? "" : source + "/tests/fixtures/fleets/dgx-a100.yaml";
  if (default_fleet.empty() && fs::exists(exe_dir / "dgx-a100.yaml"))
    default_fleet = (exe_dir / "dgx-a100.yaml").string();
  std::string fleet = !args.fleet.empty() ? args.fleet
                       : env_or("KGPU_FAKE_NVML_FLEET", env_or("KGPU_DEMO_FLEET", default_fleet));
  if (!fs::exists(nvml_dir + "/libnvidia-ml.so.1")) {
    std::cerr << "demo: the simulated NVML library is not at " << nvml_dir
              << "/libnvidia-ml.so.1 (nor next to " << exe
              << "); pass --fake-nvml-dir DIR or set KGPU_FAKE_NVML_DIR to the folder holding it (a "
                 "build has it in build/tests/fake-nvml: cmake --build build --target fake_nvml)\n";
    return 1;
  }
  if (fleet.empty() || !fs::exists(fleet)) {
    std::cerr << "demo: no fleet file" << (fleet.empty() ? std::string() : " at " + fleet)
              << "; pass --fleet FILE or set KGPU_FAKE_NVML_FLEET=FILE (the simulated node, as kgpu plugin reads it; "
                 "e.g. tests/fixtures/fleets/dgx-a100.yaml of the source tree)\n";
    return 1;
  }

  char templ[] = "/tmp/kgpu-demo-XXXXXX";
  if (!::mkdtemp(templ)) {
    std::cerr << "demo: cannot create a temp dir\n";
    return 1;
  }
  std::string tmp = templ;
  struct Cleanup {
    std::string dir;
    bool keep;
    ~Cleanup() {
      std::error_code ec;
      if (!keep) fs::remove_all(dir, ec);
    }
  } cleanup{tmp, args.keep};
  std::string plugin_dir = tmp + "/device-plugins";
  fs::create_directories(plugin_dir);
  auto timeout = std::chrono::seconds(args.timeout_s);

  std::cout << "kgpu demo: a simulated node served to a simulated kubelet\n"
            << "  fleet          " << fleet << "\n"
            << "  fake NVML      " << nvml_dir << "/libnvidia-ml.so.1 (via LD_LIBRARY_PATH)\n"
            << "  plugin dir     " << plugin_dir << "\n\n";

  // sysfs/proc/dev trees for the fleet (NUMA nodes, MIG caps), when the fixture tool is there.
  std::vector<std::string> plugin_argv = {exe, "plugin", "--kubelet-socket", plugin_dir + "/kubelet.sock"};
  std::string fixture_tool = nvml_dir + "/kgpu-fake-nvml-fixture";
  if (fs::exists(fixture_tool)) {
    Child gen({fixture_tool, fleet, tmp + "/node"}, {}, tmp + "/fixture.log");
    auto rc = gen.started() ? gen.wait(timeout) : std::nullopt;
    if (rc && *rc == 0) {
      plugin_argv.insert(plugin_argv.end(), {"--sysfs-root", tmp + "/node/sys", "--proc-root", tmp + "/node/proc",
                                             "--dev-root", tmp + "/node"});
    } else {
      std::cout << "(fixture tree not generated; NUMA nodes will be unknown)\n";
    }
  }

  kgpu::sim::KubeletSim sim(plugin_dir);
  sim.on_event([](const kgpu::sim::SimEvent& e) {
    if (e.kind == kgpu::sim::SimEvent::Kind::Update && e.message.rfind("update", 0) == 0) return;
    std::cout << ("  kubelet: " + std::string(kgpu::sim::to_string(e.kind)) +
                  (e.resource.empty() ? "" : " " + e.resource) + ": " + e.message + "\n")
              << std::flush;
  });
  if (auto st = sim.start(); !st) {
    std::cerr << "demo: " << st.error().message << "\n";
    return 1;
  }

  std::cout << "1. Starting the plugin:";
  for (const auto& a : plugin_argv) std::cout << " " << a;
  std::cout << "\n";
  std::string log = tmp + "/plugin.log";
  auto t0 = Clock::now();
  Child plugin(plugin_argv, {"LD_LIBRARY_PATH=" + nvml_dir, "KGPU_FAKE_NVML_FLEET=" + fleet}, log);
  if (!plugin.started()) {
    std::cerr << "demo: cannot start " << exe << "\n";
    return 1;
  }
  const std::string gpu = "nvidia.com/gpu";
  bool up = sim.wait_for([&](const kgpu::sim::Snapshot& s) { return s.ready(gpu); }, timeout);
  if (!up) {
    std::cerr << "demo: the plugin did not register " << gpu << " within " << args.timeout_s << " s\n";
    show_log(log);
    return 1;
  }
  auto snap = sim.snapshot();
  const auto* r = snap.find(gpu);
  // Composed first and written at once: the simulator's event lines come from another thread.
  std::ostringstream seen;
  seen << "   registered " << ms(r->last_registered - t0) << " after launch; the kubelet sees " << r->devices.size()
       << " devices (" << r->healthy_count() << " healthy):\n";
  for (const auto& d : r->devices) {
    seen << "     " << d.id << "  " << d.health;
    for (auto n : d.numa_nodes) seen << "  NUMA " << n;
    seen << "\n";
  }
  std::cout << seen.str() << std::flush;

  std::vector<std::string> free_ids = r->healthy_ids();
  struct Pod {
    const char* name;
    int gpus;
  };
  int step = 2;
  for (Pod pod : {Pod{"pod-a (1 GPU)", 1}, Pod{"pod-b (4 GPUs)", 4}}) {
    std::cout << "\n" << step++ << ". Admitting " << pod.name << ": GetPreferredAllocation, then Allocate\n";
    auto chosen = sim.preferred(gpu, free_ids, {}, pod.gpus);
    if (!chosen) {
      std::cerr << "demo: GetPreferredAllocation failed: " << chosen.error().message << "\n";
      return 1;
    }
    std::cout << "   preferred: " << kgpu::join(*chosen, ",") << "\n";
    auto edits = sim.allocate(gpu, *chosen);
    if (!edits) {
      std::cerr << "demo: Allocate failed: " << edits.error().message << "\n";
      return 1;
    }
    std::cout << "   the container gets:\n";
    kgpu::sim::print_edits(*edits, std::cout, "     ");
    for (const auto& id : *chosen) std::erase(free_ids, id);
  }

  std::cout << "\n" << step++ << ". A bad request is refused with a clear error:\n";
  auto bad = sim.allocate(gpu, {"GPU-not-on-this-node"});
  std::cout << "   Allocate GPU-not-on-this-node -> "
            << (bad ? std::string("accepted?!") : "INVALID_ARGUMENT: " + bad.error().message) << "\n";

  std::cout << "\n" << step++ << ". Simulating a kubelet restart (every socket deleted, kubelet.sock recreated)\n";
  auto took = kgpu::sim::restart_and_wait(sim, timeout);
  if (!took) {
    std::cerr << "demo: " << took.error().message << "\n";
    show_log(log);
    return 1;
  }
  std::cout << "   the plugin re-registered " << std::fixed << std::setprecision(2) << took->count() / 1000.0
            << " ms after the restart; the kubelet sees " << sim.snapshot().find(gpu)->healthy_count()
            << " healthy devices again\n";

  std::cout << "\n" << step++ << ". Stopping the plugin (SIGTERM)\n";
  auto t1 = Clock::now();
  ::kill(plugin.pid(), SIGTERM);
  auto rc = plugin.wait(std::chrono::seconds(5));
  if (!rc || *rc != 0) {
    std::cerr << "demo: the plugin did not exit cleanly\n";
    show_log(log);
    return 1;
  }
  std::cout << "   exited with 0 after " << ms(Clock::now() - t1) << "; its socket "
            << (fs::exists(plugin_dir + "/kgpu-nvidia.com-gpu.sock") ? "is still there (unexpected)" : "is removed")
            << "\n";
  sim.stop();
  std::cout << "\nDone." << (args.keep ? " Files kept in " + tmp : std::string()) << "\n";
  return 0;
}

void setup_demo(CLI::App& root) {
  auto args = std::make_shared<DemoArgs>();
  auto* cmd = root.add_subcommand("demo", "Run the plugin on a simulated DGX A100 node against a simulated kubelet");
  cmd->add_option("--fake-nvml-dir", args->fake_nvml_dir,
                  "Folder with the simulated libnvidia-ml.so.1 (default: $KGPU_FAKE_NVML_DIR, else the binary's "
                  "folder, else the build's tests/fake-nvml)");
  cmd->add_option("--fleet", args->fleet,
                  "Fleet file (default: $KGPU_FAKE_NVML_FLEET, $KGPU_DEMO_FLEET, tests/fixtures/fleets/dgx-a100.yaml of "
                  "the source tree, or dgx-a100.yaml next to the binary)");
  cmd->add_flag("--keep", args->keep, "Keep the temp dir (and the plugin's log)");
  cmd->add_option("--timeout", args->timeout_s, "Seconds each step may take")->capture_default_str();
  cmd->callback([args] { kgpu::cli::set_exit_code(run_demo(*args)); });
}
KGPU_COMMAND(setup_demo);

}  // namespace
