#pragma once
// What a DRA claim's opaque sharing config needs beyond its CDI spec, done on the node:
//  - TimeSlicing: `nvidia-smi -i <uuid> -c DEFAULT` and `nvidia-smi compute-policy -i <uuid>
//    --set-timeslice <n>` for each full GPU of the claim, and the defaults again once no prepared
//    claim time-slices that GPU;
//  - MPS: compute mode EXCLUSIVE_PROCESS on the daemon's full GPUs (DEFAULT again once no claim's
//    daemon holds them), as NVIDIA's DRA driver sets it;
//  - MPS: the claim's own MPS control daemon, run by `kgpu mps-daemon` on request (dra/claim_mps.h);
//    prepare returns only once it runs with the claim's limits, so no container starts with a
//    CUDA_MPS_PIPE_DIRECTORY that has no daemon behind it. Without an mpsRoot such claims are
//    refused (prepare_claim says so).
// Time-slice resets are recorded by the claim store (pending until they ran, across restarts) and
// run here; every nvidia-smi compute-policy run is serialised, so a reset retried by one kubelet
// call can never land after the interval a newer claim of the same GPU set in another.
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/result.h"
#include "dra/sharing/claim_mps.h"
#include "dra/sharing/prepare.h"
#include "dra/sharing/time_slicing.h"

namespace kgpu::dra {

// Runs argv with extra environment; ok when it exits 0.
using CommandRunner =
    std::function<Status(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env)>;

// A runner that spawns the program with a deadline (mps::run_program); it is killed at the deadline
// or once `cancel_fd` (when >= 0; an eventfd the owner writes at shutdown) becomes readable.
CommandRunner process_runner(std::chrono::milliseconds timeout, int cancel_fd = -1);

// The nvidia-smi to run for `config` and the environment it needs: kgpu.dra.nvidiaSmiPath, or the
// driver root's own (usr/bin, then bin), else "nvidia-smi" from PATH. Under a driver root other
// than "/", the root's libnvidia-ml.so.1 is preloaded (LD_PRELOAD) so that nvidia-smi finds its
// NVML without putting the host's whole library folder (its libc included) on the search path.
struct NvidiaSmi {
  std::string path;
  std::map<std::string, std::string> env;
};
NvidiaSmi find_nvidia_smi(const Config& config);

class ClaimSharing {
 public:
  ClaimSharing(NvidiaSmi nvidia_smi, CommandRunner run, ClaimMps mps);
  // After the claim store prepared `claim` (`prepared`: every claim prepared now, `claim` included;
  // only read when `claim` sets time slices, so a caller may pass none otherwise).
  // Time slices first, then the MPS daemon (the step that may wait). Error: the claim cannot get
  // its sharing; the caller rolls the prepare back.
  Status apply(const std::vector<PreparedClaim>& prepared, const PreparedClaim& claim) const;
  // What is prepared now (the claim store's prepared()), read when undo decides.
  using PreparedNow = std::function<std::vector<PreparedClaim>()>;
  // After the claim store released `released`: its MPS daemon goes, and the daemon of each GPU it
  // had the last memory share of (`prepared_now`, read under the lock the shares' start holds).
  // Best effort: a failure is returned for the log, the claim is gone either way. (Its time slices
  // and compute modes are pending resets.)
  Status undo(const PreparedClaim& released, const PreparedNow& prepared_now) const;
  // Runs every time-slice reset `pending` lists that is still pending when its turn comes, and
  // tells `pending` of each that succeeded. The first failure is returned (the others are
  // still tried); what failed stays pending for the next call.
  Status run_pending_resets(const PendingResets& pending) const;

 private:
  Status run_all(const std::vector<TimeSliceSetting>& settings) const;
  Status run_locked(const TimeSliceSetting& setting) const;  // compute mode DEFAULT, then the interval
  Status set_compute_modes(const std::vector<std::string>& gpu_uuids, const std::string& mode) const;
  Status compute_mode_locked(const std::string& gpu_uuid, const std::string& mode) const;
  // `claim` has a memory share of `gpu_uuid` whose daemon another claim of `prepared` uses too.
  static bool serves_other_shares(const std::vector<PreparedClaim>& prepared, const PreparedClaim& claim,
                                  const std::string& gpu_uuid);
  Status start_share_daemons(const PreparedClaim& claim) const;
  NvidiaSmi nvidia_smi_;
  CommandRunner run_;
  ClaimMps mps_;
  mutable std::mutex slices_mu_;  // held across each nvidia-smi compute-policy run
  // Held while a claim's share daemons are started, and while undo decides which to stop.
  mutable std::mutex shares_mu_;
  // Share daemons this process started or found running (under shares_mu_): a share of a GPU whose
  // daemon runs needs no compute-mode change. Empty after a restart: the first share sets it again.
  mutable std::set<std::string> running_share_daemons_;
};

}  // namespace kgpu::dra
