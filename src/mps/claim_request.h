#pragma once
// How kgpu's DRA driver asks `kgpu mps-daemon` for a claim's own MPS control daemon: a request
// file <mpsRoot>/dra-requests/<claim UID>.json, written when the claim is prepared and removed when
// it is unprepared. The supervisor runs one control daemon per request, seeing only the claim's
// GPUs, and answers through files in the claim's folder <mpsRoot>/dra/<claim UID>/: the readiness
// marker `.ready` (flock-held, as for the device-plugin MPS resources) or, after a failed start,
// `.failed` with the reason, so a prepare fails at once with that reason instead of timing out.
//
// The folder is written by kgpu alone, yet the supervisor reads it like outside input: every path is
// derived from mpsRoot and the checked claim UID (never read from the file), and the control
// commands are rebuilt from checked numbers, so a bad file can neither point the daemon at another
// folder nor pass arbitrary commands to the control pipe. Pure, apart from the path helpers' names.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "mps/claim_shm.h"
#include "mps/daemon_spec.h"

namespace kgpu {

struct MpsClaimRequest {
  std::string claim_uid;
  // CUDA_VISIBLE_DEVICES of the daemon: the claim's GPU UUIDs in the order its containers
  // enumerate them (PCI bus order), so a daemon ordinal is the container's CUDA ordinal.
  std::vector<std::string> visible_devices;
  std::optional<int> active_thread_percentage;  // 0..100
  std::map<int, uint64_t> pinned_mib;           // ordinal in visible_devices -> MiB (> 0)
  bool operator==(const MpsClaimRequest&) const = default;
};

// Bounds of a request (and of what the parser accepts), and of a failure note (written and read).
inline constexpr size_t kMpsClaimRequestMaxBytes = size_t{64} << 10;
inline constexpr size_t kMpsFailureNoteMaxBytes = 1024;
inline constexpr size_t kMpsClaimMaxDevices = 64;
inline constexpr uint64_t kMpsClaimMaxPinnedMib = uint64_t{1} << 30;  // 1 PiB

// A claim UID as it names files and CDI devices: 1..128 letters, digits and dashes.
bool is_safe_claim_uid(std::string_view uid);
// A GPU UUID as CUDA_VISIBLE_DEVICES can list it (comma-separated): the same alphabet. NVML's
// "GPU-<hex>-..." UUIDs are; anything else a broken driver reports is refused before it is sent.
bool is_cuda_device_id(std::string_view id);

std::string mps_claim_requests_dir(const std::string& mps_root);  // <mpsRoot>/dra-requests
std::string mps_claim_request_file(const std::string& mps_root, const std::string& claim_uid);
std::string mps_claim_resource(const std::string& claim_uid);  // "dra/<uid>": its folder under mpsRoot
std::string mps_claim_failure_note(const std::string& mps_root, const std::string& claim_uid);
// The claim's own shared memory, <mpsRoot>/dra/<uid>/shm: its containers' /dev/shm (mps/claim_shm.h).
std::string mps_claim_shm_dir(const std::string& mps_root, const std::string& claim_uid);
// The claim UID a request file name stands for ("<uid>.json"); nullopt for any other name.
std::optional<std::string> claim_uid_of_request_file(std::string_view file_name);

// JSON: {"apiVersion": "kgpu.io/v1", "kind": "MpsClaimDaemon", "claimUID": ..., "visibleDevices": [...],
//        "activeThreadPercentage": 25, "pinnedDeviceMemoryLimitsMiB": {"0": 8192}}
std::string render_mps_claim_request(const MpsClaimRequest& request);

// Strict: another apiVersion or kind, an unknown field, an unsafe UID, no or too many devices, a
// device ID that is not 1..128 letters, digits and dashes (it goes into CUDA_VISIBLE_DEVICES), a
// device named twice, a percentage outside 0..100, a limit for an ordinal the daemon does not see
// or outside 1 MiB .. 1 PiB; each an Error::invalid naming the field.
Result<MpsClaimRequest> parse_mps_claim_request(std::string_view text);

// The daemon the supervisor runs for `request`: folders and markers under <mpsRoot>/dra/<uid>/,
// its own shared memory of `shm_bytes` there, CUDA_VISIBLE_DEVICES, and the control commands
// (pinned memory per ordinal, then the thread percentage).
MpsDaemonSpec mps_claim_daemon_spec(const std::string& mps_root, const MpsClaimRequest& request,
                                    uint64_t shm_bytes = kClaimShmFallbackBytes);

}  // namespace kgpu
