#pragma once
// NVIDIA's DRA driver's record of the claims it prepared, read so that kgpu, taking over from that
// driver on a node, holds their GPUs and can unprepare them (the claim store adopts them). Pure.
//
// NVIDIA's kubelet plugin (k8s-dra-driver-gpu, cmd/gpu-kubelet-plugin) keeps it in
// <kubelet root>/plugins/gpu.nvidia.com/checkpoint.json:
//   {"checksum": <uint32>,
//    "v1": {"preparedClaims": {<uid>: {"status": <ResourceClaimStatus>, "preparedDevices": P}}},
//    "v2": {"checksum": <uint32>,
//           "preparedClaims": {<uid>: {"checkpointState": "PrepareStarted" | "PrepareCompleted",
//                                      "status": ..., "preparedDevices": P, "name", "namespace"}}}}
// v25.3 writes "v1" only; later releases write both, "v1" holding the completed claims of "v2".
// P = [{"devices": [E, ...], "configState": {"mpsControlDaemonID": "..."}}], an entry E one of
//   {"gpu":  {"info": {"uuid": "GPU-..."}, "device": D}}
//   {"mig":  {"concrete": {"parentUUID": "GPU-...", "migUUID": "MIG-...", ...}, "device": D}}  v25.12+
//   {"mig":  {"info": {"uuid": "MIG-..."}, "device": D}}                                      before
//   {"vfio": {"info": {"uuid": "GPU-..."}, "device": D}}                                      v25.12+
// (the other kinds null or absent), and D the kubelet plugin helper's Device, a Go struct without
// JSON tags: {"Requests": [...], "PoolName", "DeviceName", "CDIDeviceIDs": [...]} — what the
// kubelet was answered. Keys match as Go's encoding/json matches them: exactly, else ignoring ASCII
// case; null is as absent.
//
// The checksums (FNV-32a of Go's json.Marshal output) are NOT verified: kgpu cannot reproduce Go's
// marshalling byte for byte, and refusing a file over a checksum it cannot compute would forget
// claims whose pods still run. What is adopted only ever holds GPUs (holding one too long is safe;
// handing one out twice is not), so the file is trusted as far as it parses.
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "dra/sharing/prepare.h"

namespace kgpu::dra {

inline constexpr std::string_view kNvidiaDriverName = "gpu.nvidia.com";
inline constexpr std::string_view kNvidiaCheckpointFile = "checkpoint.json";
inline constexpr size_t kMaxNvidiaCheckpointBytes = size_t{64} << 20;

struct NvidiaClaim {
  std::string uid;
  // v2 only, and in practice only while PrepareStarted: NVIDIA's driver drops them when it records
  // the claim as completed, and v1 never had them. Empty when unknown.
  std::string ns, name;
  // PrepareCompleted: the kubelet got its answer, containers may run with it. Otherwise (v2
  // "PrepareStarted" or no state) a prepare that never answered: no container has the devices.
  bool completed = false;
  // Completed claims: the answer the kubelet got, per device, with the physical GPU behind it:
  // gpu_uuid the GPU's UUID and whole_gpu for full GPUs (and VFIO passthrough); for MIG devices the
  // parent's UUID, or, from a checkpoint older than v25.12 that does not name the parent, the MIG
  // device's own UUID ("MIG-..."; the claim store finds the parent in the inventory).
  // admin_access from the claim's allocation results.
  std::vector<PreparedDevice> devices;
  // The devices of this driver in status.allocation (all claims; for ones not completed the only
  // clue to what they were being given).
  std::vector<std::string> allocated;
  std::string mps_control_daemon;  // configState.mpsControlDaemonID, the first given
  bool has_config = false;         // the allocation carries opaque configs for this driver
  std::vector<std::string> pods;   // status.reservedFor names
  std::string section;             // "v2" or "v1": where it was read
  bool operator==(const NvidiaClaim&) const = default;
};

struct NvidiaCheckpoint {
  std::vector<NvidiaClaim> claims;  // in UID order; a UID in both sections is taken from "v2"
  // Sections and claim entries passed over, each with where and why (an unsafe UID, a field of the
  // wrong type, a device entry without a device name or pool). A claim entry of "v2" passed over
  // is taken from "v1" when that holds it.
  std::vector<std::string> skipped;
  // Sections of a version this reader does not know ("v3", ...): a newer driver's, whose claims
  // are not read (the file must not be consumed).
  std::vector<std::string> unknown_sections;
  bool operator==(const NvidiaCheckpoint&) const = default;
};

// `driver` picks the allocation results and configs that are this driver's ("gpu.nvidia.com").
// Errors (Error::invalid, never an exception) refuse the whole file only when nothing of it can
// be read: not JSON (a file cut short), nested deeper than kMaxJsonDepth, larger than
// kMaxNvidiaCheckpointBytes, not an object. Anything wrong further in is per entry (`skipped`):
// unlike NVIDIA's own reader, which refuses the file, every claim that can be read is, because
// each one read holds GPUs (issue 38).
Result<NvidiaCheckpoint> parse_nvidia_checkpoint(std::string_view text, const std::string& driver);

// The per-claim CDI spec file NVIDIA's driver writes in the CDI folder:
// "k8s.gpu.nvidia.com-claim_<uid>.yaml" (CDI's transient spec name for vendor "k8s.<driver>",
// class "claim").
std::string nvidia_claim_spec_file(const std::string& driver, const std::string& claim_uid);

}  // namespace kgpu::dra
