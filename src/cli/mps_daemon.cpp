// `kgpu mps-daemon`: runs next to the plugin (own container, same mpsRoot) and keeps one MPS
// control daemon per MPS-shared resource running with its default limits. The plugin advertises an
// MPS resource only once this command has written the resource's readiness marker.
// SIGTERM / SIGINT: quit every daemon and exit 0. SIGHUP: quit them, reload config, start again.
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <chrono>
#include <memory>

#include <spdlog/spdlog.h>

#include "cli/command.h"
#include "cli/node_config_selector.h"
#include "config/loader.h"
#include "mps/daemon_spec.h"
#include "mps/supervisor.h"
#include "nvml/discovery.h"
#include "nvml/nvml_library.h"
#include "plan/plan.h"

namespace {

struct MpsDaemonArgs {
  kgpu::ConfigFlags flags;
  std::string control_binary = "nvidia-cuda-mps-control";
  int backoff_ms = 1000;
};

// The daemons this node needs now: config, then NVML discovery, then the plan's MPS resources.
kgpu::Result<std::vector<kgpu::MpsDaemonSpec>> current_specs(const MpsDaemonArgs& args) {
  auto loaded = kgpu::cli::load_config_as_daemon(args.flags, false);
  if (!loaded) return loaded.error();
  const kgpu::Config& config = loaded->config;
  if (!config.mps || config.mps->resources.empty()) return std::vector<kgpu::MpsDaemonSpec>{};
  if (config.mps_root.empty()) return kgpu::Error::invalid("using MPS requires --mps-root to be specified");
  auto nvml = kgpu::NvmlLibrary::load(config.nvidia_driver_root);
  if (!nvml) return nvml.error();
  kgpu::NvidiaDiscoveryOptions options;
  options.sysfs_root = config.sysfs_root;
  options.proc_root = config.proc_root;
  options.dev_root = config.dev_root();
  auto inventory = kgpu::discover_nvidia(**nvml, options);
  if (!inventory) return inventory.error();
  const auto plan = kgpu::plan(config, *inventory);
  for (const auto& p : plan.problems) spdlog::warn("{}", p);
  return kgpu::mps_daemon_specs(config, *inventory, plan);
}

int run(const MpsDaemonArgs& args) {
  sigset_t signals, child;
  sigemptyset(&signals);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&signals, s);
  sigemptyset(&child);
  sigaddset(&child, SIGCHLD);
  sigset_t blocked = signals;
  sigaddset(&blocked, SIGCHLD);
  // Blocked before any thread or child exists, then read through signalfds the supervisor polls:
  // one to stop, one to reap exited children (as PID 1 of its container it reaps every orphan).
  pthread_sigmask(SIG_BLOCK, &blocked, nullptr);
  const int sfd = signalfd(-1, &signals, SFD_CLOEXEC);
  const int cfd = signalfd(-1, &child, SFD_CLOEXEC | SFD_NONBLOCK);
  if (sfd < 0 || cfd < 0) {
    spdlog::error("mps-daemon: cannot create a signalfd");
    return 1;
  }
  kgpu::MpsSupervisorOptions options;
  options.control_binary = args.control_binary;
  options.initial_backoff = std::chrono::milliseconds(args.backoff_ms);
  for (;;) {
    auto specs = current_specs(args);
    if (!specs) {
      // A bad config or missing driver must not crash-loop the pod: report it and wait for a
      // signal (SIGHUP after the config is fixed, or SIGTERM).
      spdlog::error("mps-daemon: {}", specs.error().message);
      specs = std::vector<kgpu::MpsDaemonSpec>{};
    }
    if (specs->empty()) spdlog::info("mps-daemon: no MPS-shared resources on this node; waiting for a signal");
    kgpu::MpsSupervisor supervisor(std::move(*specs), options);
    if (auto st = supervisor.run(sfd, cfd); !st) spdlog::error("mps-daemon: {}", st.error().message);
    signalfd_siginfo info{};
    if (::read(sfd, &info, sizeof info) != sizeof info || info.ssi_signo != SIGHUP) break;
    spdlog::info("mps-daemon: SIGHUP, reloading");
  }
  ::close(sfd);
  ::close(cfd);
  return 0;
}

void setup_mps_daemon(CLI::App& root) {
  auto args = std::make_shared<MpsDaemonArgs>();
  auto* cmd = root.add_subcommand("mps-daemon", "Run and supervise the MPS control daemons for MPS-shared resources");
  kgpu::add_config_flags(*cmd, args->flags);
  cmd->add_option("--mps-control-binary", args->control_binary, "The nvidia-cuda-mps-control executable")
      ->envname("KGPU_MPS_CONTROL_BINARY");
  cmd->add_option("--restart-backoff-ms", args->backoff_ms, "First restart delay after a daemon dies (doubles, max 30 s)")
      ->check(CLI::Range(10, 60000));
  cmd->callback([args] { kgpu::cli::set_exit_code(run(*args)); });
}

KGPU_COMMAND(setup_mps_daemon);

}  // namespace
