#pragma once
// Preparing a ResourceClaim for the containers that use it (DRA NodePrepareResources), pure: from
// the parsed claim, the pool kgpu publishes, the inventory and the config, build
//  - the per-claim CDI spec (kind "k8s.<driver>/claim", as NVIDIA's DRA driver: device
//    "<claim UID>-<device name>" with the device's nodes; claim-wide edits: NVIDIA_VISIBLE_DEVICES
//    for runtimes that read it instead of CDI, the driver files when known, MPS pipe and limits),
//  - the answer the kubelet gets per device (pool, device, request names, CDI device IDs),
//  - what sharing needs beyond container edits (a time-slice setting per GPU, an MPS daemon),
//    recorded for the caller that owns the hardware: prepare itself touches nothing.
// The device-plugin path's building blocks are reused (device nodes, runtime IDs, MPS paths and
// the CDI common edits), so a GPU reaches a container the same way through either API.
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cdi/driver_files.h"
#include "config/config.h"
#include "core/inventory.h"
#include "core/result.h"
#include "dra/model/claim.h"
#include "dra/model/dra_device.h"
#include "dra/sharing/prepare_sharing.h"
#include "mps/claim_request.h"

namespace kgpu::dra {

// One entry of NodePrepareResourceResponse.devices.
struct PreparedDevice {
  std::vector<std::string> requests;  // base request names this device serves
  std::string pool;
  std::string device;
  std::vector<std::string> cdi_device_ids;  // fully qualified: "k8s.gpu.nvidia.com/claim=<uid>-gpu-0"
  std::optional<std::string> share_id;
  bool admin_access = false;  // prepared for an admin: may overlap other claims' devices
  // The physical GPU behind the device, for the conflict check: a MIG re-layout renames devices,
  // but a whole GPU held by one claim must not reach another as MIG devices. Empty in entries of
  // checkpoints written before kgpu recorded it (compared by name only).
  std::string gpu_uuid;
  bool whole_gpu = false;  // the full GPU, not a MIG device of it
  bool operator==(const PreparedDevice&) const = default;
};

// `nvidia-smi compute-policy -i <uuid> --set-timeslice <interval>`, which prepare cannot run.
struct TimeSliceSetting {
  std::string gpu_uuid;
  TimeSliceInterval interval = TimeSliceInterval::Default;
  bool operator==(const TimeSliceSetting&) const = default;
};

// A memory share of a full GPU (kgpu.dra.sharing.memory, issue 31): what the claim consumes of
// it, checked against the GPU's other shares by the claim store, and the MPS client limits its
// containers get. The claim's shares of one device (several requests) are summed.
struct GpuShare {
  std::string device;    // the published device ("gpu-0")
  std::string gpu_uuid;
  uint64_t memory_bytes = 0;                  // consumed memory: CUDA_MPS_PINNED_DEVICE_MEM_LIMIT
  std::optional<uint64_t> multiprocessors;    // consumed, where published
  std::optional<int> active_thread_percentage;  // CUDA_MPS_ACTIVE_THREAD_PERCENTAGE, if any
  bool operator==(const GpuShare&) const = default;
};

// The MPS control daemon of a shared GPU: one per GPU, shared by every claim with a share of it,
// asked of `kgpu mps-daemon` under this name (mps/claim_request.h) and kept while any share is
// prepared. Never a claim UID (those are UUIDs, no letters past f).
std::string share_daemon_name(const std::string& gpu_uuid);  // "gpushare-<uuid>"

// What must exist on the node for the claim's containers, and be undone on unprepare.
struct PreparedClaim {
  ClaimRef ref;
  std::string driver;
  std::vector<PreparedDevice> devices;
  std::string cdi_spec_file;  // file name in the CDI folder
  std::vector<TimeSliceSetting> time_slicing;
  // Full GPUs under the claim's MPS daemon: compute mode EXCLUSIVE_PROCESS while it holds them, as
  // NVIDIA's driver sets it (a time-sliced GPU gets DEFAULT); both go back to the driver's
  // defaults once no claim needs them (the store's pending resets).
  std::vector<std::string> exclusive_gpus;
  // The claim's own MPS control daemon, when a config asked for MPS: what `kgpu mps-daemon` is
  // asked to run (mps/claim_request.h), seeing the claim's GPUs only.
  std::optional<MpsClaimRequest> mps;
  // Memory shares of full GPUs, and the shared GPUs' daemons they are clients of (one per GPU,
  // named share_daemon_name(); their GPUs are in exclusive_gpus too).
  std::vector<GpuShare> shares{};
  std::vector<MpsClaimRequest> share_daemons{};
  bool operator==(const PreparedClaim&) const = default;
};

struct Preparation {
  PreparedClaim claim;
  nlohmann::json cdi_spec;
};

// What prepare_claim reads; references, as it runs once per kubelet call.
struct PrepareInputs {
  const Config& config;
  const Inventory& inventory;
  const DriverPool& pool;  // what kgpu publishes for the driver now (healthy devices only)
  // The node's driver files (find_driver_files), added to the claim spec as the device-plugin CDI
  // spec adds them; null leaves them to the runtime (nvidia-container-runtime reads
  // NVIDIA_VISIBLE_DEVICES) or to the device-plugin's own spec.
  const DriverFiles* driver_files = nullptr;
};

// Errors (Error::invalid unless said): an unsafe claim UID (it names a file and CDI devices), the
// claim not allocated or without devices of the pool (see results_for), a device the pool does not
// publish (named), one device configured for two kinds of sharing, an opaque config that does
// not decode, that names the request but is for another device type (GpuConfig on a MIG device;
// one for every request is passed over instead, as NVIDIA's driver does), or that asks for
// what kgpu cannot do (MPS without --mps-root, limits for a device the claim
// does not hold, a pinned limit above the device's memory, two thread percentages in one claim).
Result<Preparation> prepare_claim(const ResourceClaim& claim, const PrepareInputs& inputs);

// CDI naming of claim specs, shared with the claim store (which removes specs by name).
std::string claim_cdi_kind(const std::string& driver);  // "k8s.gpu.nvidia.com/claim"
// "kgpu-k8s.gpu.nvidia.com-claim_<uid>.json": never the name cdi_spec_file_name() gives a kind,
// so the device-plugin spec writer's clean-up leaves claim specs alone.
std::string claim_cdi_spec_file(const std::string& driver, const std::string& claim_uid);
// UIDs name files and CDI devices: kgpu::is_safe_claim_uid (mps/claim_request.h), shared with the
// MPS supervisor, which reads claim UIDs back from request files.

}  // namespace kgpu::dra
