#pragma once
// The effective configuration: NVIDIA k8s-device-plugin's config file format (version v1) plus a
// `kgpu:` section for kgpu-only settings. Loading (file, env, flags, precedence, validation with
// line numbers) lives in config/loader.h; this header is the plain value every module reads.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "sysfs/generic_group.h"  // GenericDeviceGroup: plain value type, no sysfs code

namespace kgpu {

enum class MigStrategy { None, Single, Mixed };
enum class DeviceListStrategy { EnvVar, VolumeMounts, CdiAnnotations, CdiCri };
enum class DeviceIdStrategy { Uuid, Index };
enum class SharedAllocationPolicy { Distributed, Packed };
// How MIG devices are picked: Shared follows SharedAllocationPolicy (NVIDIA's
// sharedDevicesAllocationPolicy governs replicas and MIG alike, v0.20); SameParent and Spread are
// kgpu's older names, kept as an alias that overrides it for MIG (same-parent = packed, spread =
// distributed).
enum class MigAllocationPolicy { Shared, SameParent, Spread };

const char* to_string(MigStrategy);
const char* to_string(DeviceListStrategy);
const char* to_string(DeviceIdStrategy);
const char* to_string(SharedAllocationPolicy);
const char* to_string(MigAllocationPolicy);

// `devices:` of a sharing entry: "all", a count, or a list of GPU indices / "i:j" / UUIDs.
struct DeviceSelector {
  struct All {
    bool operator==(const All&) const = default;
  };
  std::variant<All, int, std::vector<std::string>> value = All{};
  bool operator==(const DeviceSelector&) const = default;
};

// The most replicas one sharing entry or device group may ask for. Beyond any real use (MPS allows
// 48 clients per GPU), and it keeps the planner's work bounded; whether the device list then fits
// the kubelet's message limit is checked per node by the planner (plan/message_size.h).
inline constexpr int kMaxReplicas = 10000;

struct ReplicatedResource {
  std::string name;    // normalised: "nvidia.com/gpu"
  std::string rename;  // normalised or empty
  int replicas = 0;
  DeviceSelector devices;
  bool operator==(const ReplicatedResource&) const = default;
};

struct ReplicatedResources {
  bool rename_by_default = false;
  std::optional<bool> fail_requests_greater_than_one;  // unset: false for time-slicing, true for MPS
  std::vector<ReplicatedResource> resources;
  bool operator==(const ReplicatedResources&) const = default;
};

struct ResourcePattern {
  std::string pattern;  // wildcard '*', anchored
  std::string name;     // normalised
  bool operator==(const ResourcePattern&) const = default;
};

// XID handling; see health/ for the semantics.
enum class XidAction { Ignore, MarkUnhealthy, MarkUnhealthyUntilReset };
const char* to_string(XidAction);  // "ignore", "mark-unhealthy", "mark-unhealthy-until-reset"

// kgpu as a DRA driver (resource.k8s.io) next to, or instead of, the device-plugin API.
// GPUs published for memory shares (issue 31): DRA consumable capacity (allowMultipleAllocations
// and a `memory` capacity with a request policy), each share an MPS client of the GPU's one
// control daemon with its consumed memory as CUDA_MPS_PINNED_DEVICE_MEM_LIMIT.
struct DraMemorySharing {
  std::vector<std::string> gpus;  // full NVIDIA GPUs by index or UUID, or ["all"]; empty: none
  // requestPolicy of `memory` (Kubernetes quantities): what a request that names no amount takes,
  // and the valid amounts min, min + step, ... (the scheduler rounds requests up to one).
  std::string default_share = "1Gi";
  std::string min_share = "1Gi";
  std::string share_step = "1Gi";
  // > 0: `multiprocessors` is published as a second consumable capacity (the GPU's SM count), a
  // request that names no amount taking this many; a share's CUDA_MPS_ACTIVE_THREAD_PERCENTAGE
  // follows from what it consumed. 0: not published.
  uint64_t multiprocessors_default = 0;
  // 1..100: CUDA_MPS_ACTIVE_THREAD_PERCENTAGE of a share that consumed no multiprocessors; 0: none.
  uint64_t active_thread_percentage = 0;
  // The shares of one GPU are one trust domain (one MPS server: docs/operations.md, "Trust
  // model"): true keeps each GPU's shares within one namespace; a share of another namespace is
  // refused at prepare, naming both.
  bool one_namespace_per_gpu = false;
  bool operator==(const DraMemorySharing&) const = default;
};

struct DraConfig {
  bool enabled = false;
  bool device_plugin = true;        // the device-plugin API keeps serving the GPUs DRA does not own
  std::vector<std::string> gpus;    // NVIDIA GPUs (indexes or UUIDs) DRA owns; empty: all of them
  std::vector<std::string> vendors{"nvidia"};  // whose GPUs DRA serves: nvidia, amd, intel
  std::string driver = "gpu.nvidia.com";
  std::string amd_driver = "gpu.amd.com";
  std::string intel_driver = "gpu.intel.com";
  // Runs claims' time-slice intervals (nvidia-smi compute-policy); empty: <driver root>/usr/bin/nvidia-smi
  // or /bin/nvidia-smi under the driver root, else nvidia-smi from PATH.
  std::string nvidia_smi_path;
  // XIDs whose device taint is NoExecute (the pods using the device are evicted) instead of
  // NoSchedule: the operator's opt-in, since killing a pod on a failing GPU is not always right.
  std::vector<uint64_t> no_execute_xids;
  DraMemorySharing memory_sharing;
  // Device metadata (KEP-5304, alpha): a JSON document per request of each prepared claim, mounted
  // into its containers (dra/health/device_metadata.h). Off until the format is beta.
  bool device_metadata = false;
  // Dynamic MIG (issue 42, docs/dynamic-mig.md): NVIDIA GPUs (indexes, UUIDs or ["all"]) published
  // as their full device plus every MIG placement they could host, consuming one counter set per
  // GPU; prepare creates the allocated placement's instances, unprepare destroys them. Empty: none.
  std::vector<std::string> mig_dynamic;
  bool operator==(const DraConfig&) const = default;
};

struct HealthConfig {
  bool enabled = true;          // DP_DISABLE_HEALTHCHECKS=all turns this off
  bool xids_enabled = true;     // DP_DISABLE_HEALTHCHECKS=xids turns this off
  std::vector<uint64_t> ignored_xids = {13, 31, 43, 45, 68, 109};
  std::map<uint64_t, XidAction> xid_actions;  // per-XID overrides, applied after the ignore list
  bool recovery_enabled = true;
  uint32_t recovery_probe_interval_ms = 5000;  // first re-probe; backs off to the max
  uint32_t recovery_probe_max_interval_ms = 60000;
  uint32_t recovery_quiet_period_ms = 30000;   // healthy answers needed this long before re-advertise
  bool operator==(const HealthConfig&) const = default;
};

struct Config {
  // --- flags (NVIDIA names) ---
  MigStrategy mig_strategy = MigStrategy::None;
  bool fail_on_init_error = true;
  std::string mps_root;
  std::string nvidia_driver_root = "/";
  std::string nvidia_dev_root;  // empty: same as nvidia_driver_root
  std::string device_discovery_strategy = "auto";
  bool gds_enabled = false;
  bool mofed_enabled = false;
  bool gdrcopy_enabled = false;
  bool use_node_feature_api = false;  // labels to a NodeFeature object, not the feature file
  // plugin.*
  bool pass_device_specs = false;
  std::vector<DeviceListStrategy> device_list_strategy = {DeviceListStrategy::EnvVar};
  DeviceIdStrategy device_id_strategy = DeviceIdStrategy::Uuid;
  std::string cdi_annotation_prefix = "cdi.k8s.io/";
  std::string nvidia_ctk_path = "/usr/bin/nvidia-ctk";
  std::string container_driver_root = "/driver-root";
  SharedAllocationPolicy shared_devices_allocation_policy = SharedAllocationPolicy::Distributed;
  // gfd.*
  bool gfd_oneshot = false;
  bool gfd_no_timestamp = false;
  std::string gfd_output_file = "/etc/kubernetes/node-feature-discovery/features.d/kgpu";
  std::string gfd_machine_type_file = "/sys/class/dmi/id/product_name";
  std::string gfd_sleep_interval = "60s";  // Go duration text ("60s", "1m30s") or "infinite"

  // --- resources / sharing ---
  std::vector<ResourcePattern> gpu_resources;  // empty: {"*", "nvidia.com/gpu"}
  std::vector<ResourcePattern> mig_resources;  // empty: defaults per strategy
  ReplicatedResources time_slicing;
  std::optional<ReplicatedResources> mps;

  // --- imex ---
  std::vector<int> imex_channel_ids;  // [] or [0]
  bool imex_required = false;

  // --- CLI-only (NVIDIA) ---
  std::string kubelet_socket = "/var/lib/kubelet/device-plugins/kubelet.sock";
  std::string config_file;

  // --- kgpu: section ---
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
  std::string cdi_spec_dir = "/var/run/cdi";
  std::string cdi_kind = "k8s.device-plugin.nvidia.com/gpu";
  std::string metrics_addr;  // empty: off
  bool gpu_telemetry = true;  // GPU series under dcgm-exporter's names on /metrics (KGPU_GPU_TELEMETRY)
  MigAllocationPolicy mig_allocation_policy = MigAllocationPolicy::Shared;
  HealthConfig health;
  std::vector<std::string> backends = {"auto"};  // auto | nvidia | amd | intel | generic
  std::vector<GenericDeviceGroup> device_groups;  // kgpu.deviceGroups (sysfs/generic_group.h)
  bool labels_enabled = false;
  bool keep_labels_on_exit = false;
  DraConfig dra;

  bool operator==(const Config&) const = default;

  std::string dev_root() const { return nvidia_dev_root.empty() ? nvidia_driver_root : nvidia_dev_root; }
  // Where NVML is looked for, in order: the host driver root as mounted in the plugin's container
  // (containerDriverRoot, /driver-root in the chart), then nvidiaDriverRoot (running on the host),
  // as NVIDIA's plugin does. Roots that are "/" or empty are left out (the loader's default path).
  std::vector<std::string> driver_search_roots() const {
    std::vector<std::string> roots;
    for (const auto* r : {&container_driver_root, &nvidia_driver_root})
      if (!r->empty() && *r != "/" && (roots.empty() || roots.front() != *r)) roots.push_back(*r);
    return roots;
  }
  bool has_strategy(DeviceListStrategy s) const;
};

}  // namespace kgpu
