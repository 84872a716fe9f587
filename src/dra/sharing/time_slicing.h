#pragma once
// Time-slice intervals that DRA claims ask for (GpuConfig sharing.strategy TimeSlicing), as
// settings of the GPUs they hold: which `nvidia-smi compute-policy` runs a prepare needs, which an
// unprepare needs to put a GPU back, and which claims cannot be honoured because a GPU they share
// with a prepared claim already runs another interval. Pure; the caller runs the commands.
#include <functional>
#include <string>
#include <vector>

#include "core/result.h"
#include "dra/sharing/prepare.h"

namespace kgpu::dra {

// The settings to apply for `claim`, given the claims already prepared (`claim` itself may be
// among them: a repeated prepare re-applies, which is harmless). Error (precondition) naming the
// GPU, both intervals and the other claim when a prepared claim holds that GPU with another one.
Result<std::vector<TimeSliceSetting>> time_slices_to_apply(const std::vector<PreparedClaim>& prepared,
                                                           const PreparedClaim& claim);

// After `released` is unprepared: its GPUs that it time-sliced or held in EXCLUSIVE_PROCESS for its
// MPS daemon, and that no claim in `remaining` time-slices or holds so, go back to the driver's
// defaults (interval Default, compute mode DEFAULT: one reset per GPU).
std::vector<TimeSliceSetting> time_slices_to_reset(const std::vector<PreparedClaim>& remaining,
                                                   const PreparedClaim& released);

// nvidia-smi compute-policy -i <uuid> --set-timeslice <0..3>
std::vector<std::string> set_timeslice_argv(const std::string& nvidia_smi, const TimeSliceSetting& setting);

// nvidia-smi -i <uuid> -c <DEFAULT|EXCLUSIVE_PROCESS>, as NVIDIA's DRA driver runs it.
std::vector<std::string> set_compute_mode_argv(const std::string& nvidia_smi, const std::string& gpu_uuid,
                                               const std::string& mode);

// Whether `claim` sets the GPU's settings itself (time-slices it, or holds it for its MPS daemon):
// a reset still pending for that GPU is then superseded rather than awaited.
bool sets_gpu(const PreparedClaim& claim, const std::string& gpu_uuid);

// The time-slice resets kept pending across restarts: the claim store keeps them
// (pending_resets_of), ClaimSharing runs them. Functions, so that sharing needs nothing of claims.
struct PendingResets {
  std::function<std::vector<TimeSliceSetting>()> list;
  std::function<bool(const std::string& gpu_uuid)> still_pending;  // not taken by a newer claim
  std::function<void(const std::string& gpu_uuid)> done;
};

}  // namespace kgpu::dra
