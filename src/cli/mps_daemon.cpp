// `kgpu mps-daemon`: runs next to the plugin (own container, same mpsRoot) and keeps one MPS
// control daemon per MPS-shared resource running with its default limits. The plugin advertises an
// MPS resource only once this command has written the resource's readiness marker. With an
// mpsRoot it also runs the daemons DRA claims ask for (<mpsRoot>/dra-requests/, written by the
// plugin's DRA driver at prepare), whatever the config's resources are.
// A changed config (file content or the Node's config label) re-plans the resources' daemons and
// touches only those that differ.
// SIGTERM / SIGINT: quit every daemon and exit 0. SIGHUP: quit them, reload config, start again.
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <optional>

#include <spdlog/spdlog.h>

#include "cli/command.h"
#include "cli/mps_config_source.h"
#include "config/loader.h"
#include "core/safe_file.h"
#include "dra/sharing/prepare_sharing.h"
#include "mps/claim_request_folder.h"
#include "mps/claim_shm.h"
#include "mps/supervisor.h"

namespace {

struct MpsDaemonArgs {
  kgpu::ConfigFlags flags;
  std::string control_binary = "nvidia-cuda-mps-control";
  int backoff_ms = 1000;
  std::string claim_shm_size;  // a quantity; empty: half of the node's memory, as NVIDIA's DRA driver
};

// The size of each DRA claim's shared-memory tmpfs: the flag, or half of the node's memory.
kgpu::Result<uint64_t> claim_shm_bytes(const MpsDaemonArgs& args) {
  auto meminfo = kgpu::read_regular_file("/proc/meminfo", 64 << 10, kgpu::FollowLinks::Yes);
  if (args.claim_shm_size.empty()) {
    if (!meminfo) spdlog::warn("mps-daemon: {}; DRA MPS claims get the fallback /dev/shm size", meminfo.error().message);
    return kgpu::default_claim_shm_bytes(meminfo ? *meminfo : "");
  }
  auto bytes = kgpu::dra::parse_quantity_bytes(args.claim_shm_size);
  if (!bytes) return kgpu::Error::invalid("--claim-shm-size " + args.claim_shm_size + ": " + bytes.error().message);
  if (auto st = kgpu::check_claim_shm_bytes(args.claim_shm_size, *bytes, meminfo ? *meminfo : ""); !st)
    return st.error();
  return *bytes;
}

// One supervisor run (until a signal): the config's MPS resources, followed as the config changes,
// and the DRA claims' request folder under mpsRoot.
void supervise(const MpsDaemonArgs& args, uint64_t shm_bytes, const kgpu::MpsSupervisorOptions& options, int sfd,
               int cfd) {
  auto config = kgpu::cli::MpsConfigSource::create(args.flags);
  if (!config) {
    // A bad config must not crash-loop the pod: report it and wait for a signal (SIGHUP after the
    // config is fixed, or SIGTERM).
    spdlog::error("mps-daemon: {}", config.error().message);
    kgpu::MpsSupervisor idle({}, options);
    (void)idle.run(sfd, cfd);
    return;
  }
  std::vector<kgpu::MpsDaemonSource*> sources{config->get()};
  // The claims' folder follows the mpsRoot of the config at start (a changed mpsRoot needs a SIGHUP).
  const std::string mps_root = (*config)->config().mps_root;
  std::optional<kgpu::MpsClaimRequestFolder> requests;
  if (!mps_root.empty()) {
    auto folder = kgpu::MpsClaimRequestFolder::open(mps_root, shm_bytes);
    if (folder) requests.emplace(std::move(*folder));
    else spdlog::error("mps-daemon: DRA claims cannot get MPS daemons: {}", folder.error().message);
  }
  if (requests) sources.push_back(&*requests);
  else spdlog::info("mps-daemon: no mpsRoot, so no MPS daemons for DRA claims");
  kgpu::MpsSupervisor supervisor({}, options);
  if (auto st = supervisor.run(sfd, cfd, sources); !st) spdlog::error("mps-daemon: {}", st.error().message);
}

int run(const MpsDaemonArgs& args) {
  auto shm_bytes = claim_shm_bytes(args);
  if (!shm_bytes) {
    spdlog::error("mps-daemon: {}", shm_bytes.error().message);
    return 2;
  }
  spdlog::info("mps-daemon: each DRA MPS claim gets its own /dev/shm, a tmpfs of {} MiB", *shm_bytes >> 20);
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
    supervise(args, *shm_bytes, options, sfd, cfd);
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
  kgpu::add_config_flags(*cmd, args->flags, kgpu::FlagScope::MpsDaemon);
  cmd->add_option("--mps-control-binary", args->control_binary, "The nvidia-cuda-mps-control executable")
      ->envname("KGPU_MPS_CONTROL_BINARY");
  cmd->add_option("--claim-shm-size", args->claim_shm_size,
                  "Size of each DRA MPS claim's own /dev/shm tmpfs, a Kubernetes quantity such as 1Gi (default: half "
                  "of the node's memory, as NVIDIA's DRA driver)")
      ->envname("KGPU_MPS_CLAIM_SHM_SIZE");
  cmd->add_option("--restart-backoff-ms", args->backoff_ms, "First restart delay after a daemon dies (doubles, max 30 s)")
      ->check(CLI::Range(10, 60000));
  cmd->callback([args] { kgpu::cli::set_exit_code(run(*args)); });
}

KGPU_COMMAND(setup_mps_daemon);

}  // namespace
