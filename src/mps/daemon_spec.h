#pragma once
// What `kgpu mps-daemon` runs, derived purely from the plan: one MPS control daemon per MPS-shared
// resource, with its directories and the control-pipe commands that set its default limits.
#include <cstdint>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/inventory.h"
#include "core/resource_plan.h"

namespace kgpu {

struct MpsDaemonSpec {
  std::string resource;      // "nvidia.com/gpu"
  std::string pipe_dir;      // CUDA_MPS_PIPE_DIRECTORY
  std::string log_dir;       // CUDA_MPS_LOG_DIRECTORY
  std::string ready_marker;  // written once the daemon runs with its limits set
  // Sent one per control-client invocation once the daemon is up, e.g.
  // "set_default_device_pinned_mem_limit 0 10240M", "set_default_active_thread_percentage 25".
  std::vector<std::string> commands;
  // CUDA_VISIBLE_DEVICES of the daemon (comma-separated UUIDs); empty: every GPU of the node, as
  // the device-plugin resources' daemons (their limits are keyed by NVML index). A DRA claim's
  // daemon sees only the claim's GPUs.
  std::string visible_devices;
  // Where a failed start is described for whoever waits on the marker (DRA claims' daemons); empty:
  // only the log says it.
  std::string failure_note;
  // A DRA claim's own shared memory (mps/claim_shm.h): a tmpfs of shm_bytes mounted at shm_dir,
  // which the daemon and its MPS server see at /dev/shm. Empty: the daemon shares the supervisor's
  // /dev/shm (the device-plugin resources' daemons, whose clients all mount <mpsRoot>/shm).
  std::string shm_dir;
  uint64_t shm_bytes = 0;
  bool operator==(const MpsDaemonSpec&) const = default;
};

// One spec per MPS resource of `plan`, in plan order. Per GPU behind the resource (inventory
// order) a pinned memory limit of memory/replicas keyed by the GPU's index (the daemon sees every
// GPU of the node), then one active thread percentage of 100/replicas. GPUs of unknown memory get
// no memory limit.
std::vector<MpsDaemonSpec> mps_daemon_specs(const Config& config, const Inventory& inventory,
                                            const ResourcePlan& plan);

}  // namespace kgpu
