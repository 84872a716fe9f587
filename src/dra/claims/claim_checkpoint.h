#pragma once
// The prepared-claims checkpoint as text: what must survive a daemon restart between prepare and
// unprepare (the kubelet's answer per claim, the claim's CDI spec file, the sharing to undo) and
// the boot it was written in. Pure; the claim store reads and writes the file.
//
//   {"kind": "KgpuPreparedClaims", "version": 1, "bootID": "...", "checksum": "fnv1a64:<hex>",
//    "claims": [{"uid", "namespace", "name", "driver", "cdiSpecFile", "devices": [...],
//                "timeSlicing": [...], "mps": {...}}],
//    "pendingGpuResets": [{"gpuUUID", "interval"}], "pendingChecksum": "fnv1a64:<hex>",
//    "migInstances": [{"claim", "device", "parentUUID", "profileID", "start", "size",
//                      "gpuInstancesBefore": [..], "made": {"gi", "ci", "migUUID", "nodes": [..]}}],
//    "migChecksum": "fnv1a64:<hex>"}
// The checksum covers the compact dump of "claims": a file cut short or edited by hand is refused
// whole rather than half-trusted. The pending resets (GPUs an unprepared claim left with its
// time-slice interval or compute mode because nvidia-smi failed or kgpu died first: both go back
// to the driver's defaults) have their own checksum, so a kgpu that predates them still reads the
// claims of a file that has some (and ignores the resets). The dynamic MIG instances (issue 42) are
// a section of the same kind: version 1 still, so a version-1 file of an older kgpu loads as it
// is, and an older kgpu reading a newer file keeps the claims and passes the instances over (it
// then never destroys them: to it they look made by an operator, the safe side).
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "dra/claims/dynamic_mig_control.h"
#include "dra/sharing/prepare.h"

namespace kgpu::dra {

inline constexpr int kCheckpointVersion = 1;
inline constexpr size_t kMaxCheckpointBytes = size_t{64} << 20;

// A dynamic MIG instance kgpu makes for a claim, recorded as the intent before NVML is asked
// (claim, placement, the GPU instances already there) and with what was made once it exists. A
// restart destroys what a record names unless its claim is prepared, and nothing else.
struct MigInstanceRecord {
  std::string claim_uid;
  std::string device;  // the published placement ("gpu-0-mig-3g40gb-9-4")
  MigPlacement placement;
  // The parent's GPU instance ids when the intent was recorded: a record without `made` (kgpu
  // died inside the create) finds its instance at the placement among the others only.
  std::vector<unsigned> gpu_instances_before;
  std::optional<MigInstanceMade> made;
  bool operator==(const MigInstanceRecord&) const = default;
};

struct Checkpoint {
  std::string boot_id;  // empty: unknown when written
  std::vector<PreparedClaim> claims;
  std::vector<TimeSliceSetting> pending_resets;  // one per GPU at most; interval Default, compute mode DEFAULT
  std::vector<MigInstanceRecord> mig_instances{};
  bool operator==(const Checkpoint&) const = default;
};

std::string checkpoint_text(const Checkpoint& checkpoint);

// Errors (Error::invalid) say what is wrong: not JSON, another kind or version, a checksum
// mismatch, a field of the wrong type; a version newer than kCheckpointVersion is
// Error::precondition (written by a newer kgpu: never to be overwritten by this one).
Result<Checkpoint> parse_checkpoint(std::string_view text);

}  // namespace kgpu::dra
