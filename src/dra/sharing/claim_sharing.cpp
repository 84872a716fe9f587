#include "dra/sharing/claim_sharing.h"

#include <spdlog/spdlog.h>

#include <filesystem>

#include "dra/sharing/time_slicing.h"
#include "mps/process.h"
#include "nvml/nvml_library.h"

namespace kgpu::dra {

namespace {

bool is_file(const std::string& path) {
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

std::string under(const std::string& root, const std::string& path) {
  return (root.empty() || root == "/") ? path : root + path;
}

std::string joined(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) out += (out.empty() ? "" : " ") + a;
  return out;
}

}  // namespace

CommandRunner process_runner(std::chrono::milliseconds timeout, int cancel_fd) {
  return [timeout, cancel_fd](const std::vector<std::string>& argv,
                              const std::map<std::string, std::string>& env) -> Status {
    auto status = mps::run_program(argv, env, "", timeout, cancel_fd);
    if (!status) return Error{status.error().code, joined(argv) + ": " + status.error().message};
    if (*status != 0) return Error::unavailable(joined(argv) + ": exited with status " + std::to_string(*status));
    return ok_status();
  };
}

NvidiaSmi find_nvidia_smi(const Config& config) {
  NvidiaSmi out;
  const std::string& root = config.nvidia_driver_root;
  if (!config.dra.nvidia_smi_path.empty()) {
    out.path = config.dra.nvidia_smi_path;
  } else {
    out.path = "nvidia-smi";
    for (const char* candidate : {"/usr/bin/nvidia-smi", "/bin/nvidia-smi"})
      if (is_file(under(root, candidate))) {
        out.path = under(root, candidate);
        break;
      }
  }
  if (!root.empty() && root != "/")
    for (const auto& library : NvmlLibrary::candidate_paths(root))
      if (library.starts_with(root) && is_file(library)) {
        out.env["LD_PRELOAD"] = library;
        break;
      }
  return out;
}

ClaimSharing::ClaimSharing(NvidiaSmi nvidia_smi, CommandRunner run, ClaimMps mps)
    : nvidia_smi_(std::move(nvidia_smi)), run_(std::move(run)), mps_(std::move(mps)) {}

Status ClaimSharing::apply(const std::vector<PreparedClaim>& prepared, const PreparedClaim& claim) const {
  auto settings = time_slices_to_apply(prepared, claim);
  if (!settings) return settings.error();
  if (auto st = run_all(*settings); !st) return st;
  // As NVIDIA's driver: the MPS daemon's GPUs run EXCLUSIVE_PROCESS (only the daemon's server
  // opens them). Put back by the store's pending reset once no claim holds them so. A shared GPU's
  // mode goes with its daemon (start_share_daemons).
  std::vector<std::string> exclusive;
  for (const auto& uuid : claim.exclusive_gpus)
    if (std::none_of(claim.share_daemons.begin(), claim.share_daemons.end(),
                     [&](const MpsClaimRequest& d) { return d.visible_devices.front() == uuid; }))
      exclusive.push_back(uuid);
  if (auto st = set_compute_modes(exclusive, "EXCLUSIVE_PROCESS"); !st) return st;
  // Last: ClaimMps withdraws a request it made when the daemon does not come up, so a failed
  // prepare leaves no daemon behind (a time slice it set stays until the GPU's next claim).
  if (claim.mps)
    if (auto st = mps_.start(*claim.mps); !st)
      return Error{st.error().code, "claim " + claim.ref.uid + " asks for MPS: " + st.error().message};
  return start_share_daemons(claim);
}

Status ClaimSharing::start_share_daemons(const PreparedClaim& claim) const {
  if (claim.share_daemons.empty()) return ok_status();
  // One at a time, and never beside undo's decision to stop one; other claims never wait here.
  std::lock_guard shares(shares_mu_);
  for (const auto& daemon : claim.share_daemons) {
    const std::string& uuid = daemon.visible_devices.front();
    if (!running_share_daemons_.contains(daemon.claim_uid))
      if (auto st = set_compute_modes({uuid}, "EXCLUSIVE_PROCESS"); !st) return st;
    // A running daemon's request is rewritten as it is and answers at once (a share's limits are
    // its client's environment, not the daemon's).
    if (auto st = mps_.start(daemon); !st)
      return Error{st.error().code, "claim " + claim.ref.uid + " has a memory share of " + uuid + ": " + st.error().message};
    running_share_daemons_.insert(daemon.claim_uid);
  }
  return ok_status();
}

bool ClaimSharing::serves_other_shares(const std::vector<PreparedClaim>& prepared, const PreparedClaim& claim,
                                       const std::string& gpu_uuid) {
  const std::string daemon = share_daemon_name(gpu_uuid);
  auto uses = [&](const PreparedClaim& c) {
    return std::any_of(c.share_daemons.begin(), c.share_daemons.end(),
                       [&](const MpsClaimRequest& d) { return d.claim_uid == daemon; });
  };
  if (!uses(claim)) return false;
  return std::any_of(prepared.begin(), prepared.end(),
                     [&](const PreparedClaim& c) { return c.ref.uid != claim.ref.uid && uses(c); });
}

Status ClaimSharing::undo(const PreparedClaim& released, const PreparedNow& prepared_now) const {
  Status first = released.mps ? mps_.stop(released.ref.uid) : ok_status();
  if (released.share_daemons.empty()) return first;
  // The last share of a GPU quits its daemon. Read under the lock a share's apply holds, after
  // the store forgot `released`: a share being prepared is either seen here (the daemon stays) or
  // starts the daemon again after this stop.
  std::lock_guard shares(shares_mu_);
  const auto prepared = prepared_now();
  for (const auto& daemon : released.share_daemons) {
    const std::string& uuid = daemon.visible_devices.front();
    if (serves_other_shares(prepared, released, uuid)) continue;
    running_share_daemons_.erase(daemon.claim_uid);
    if (auto st = mps_.stop(daemon.claim_uid); !st && first.ok()) first = st;
  }
  return first;
}

Status ClaimSharing::run_pending_resets(const PendingResets& pending) const {
  Status first = ok_status();
  for (const auto& reset : pending.list()) {
    std::lock_guard lock(slices_mu_);
    // A claim prepared since the list was read may have taken the GPU with an interval of its own.
    if (!pending.still_pending(reset.gpu_uuid)) continue;
    if (auto st = run_locked(reset); !st) {
      if (first.ok()) first = st;
      continue;
    }
    pending.done(reset.gpu_uuid);
  }
  return first;
}

Status ClaimSharing::run_all(const std::vector<TimeSliceSetting>& settings) const {
  std::lock_guard lock(slices_mu_);
  for (const auto& s : settings)
    if (auto st = run_locked(s); !st) return st;
  return ok_status();
}

Status ClaimSharing::set_compute_modes(const std::vector<std::string>& gpu_uuids, const std::string& mode) const {
  std::lock_guard lock(slices_mu_);
  for (const auto& uuid : gpu_uuids)
    if (auto st = compute_mode_locked(uuid, mode); !st) return st;
  return ok_status();
}

Status ClaimSharing::compute_mode_locked(const std::string& gpu_uuid, const std::string& mode) const {
  if (auto st = run_(set_compute_mode_argv(nvidia_smi_.path, gpu_uuid, mode), nvidia_smi_.env); !st)
    return Error{st.error().code, "cannot set compute mode " + mode + " on " + gpu_uuid + ": " + st.error().message};
  spdlog::info("DRA: {} runs compute mode {}", gpu_uuid, mode);
  return ok_status();
}

Status ClaimSharing::run_locked(const TimeSliceSetting& s) const {
  // A time-sliced GPU runs compute mode DEFAULT (as NVIDIA's driver sets it); a reset puts both
  // the interval and the compute mode back.
  if (auto st = compute_mode_locked(s.gpu_uuid, "DEFAULT"); !st) return st;
  auto argv = set_timeslice_argv(nvidia_smi_.path, s);
  if (auto st = run_(argv, nvidia_smi_.env); !st)
    return Error{st.error().code, "cannot set time-slice interval " + std::string(to_string(s.interval)) + " on " +
                                      s.gpu_uuid + ": " + st.error().message};
  spdlog::info("DRA: {} runs time-slice interval {}", s.gpu_uuid, to_string(s.interval));
  return ok_status();
}

}  // namespace kgpu::dra
