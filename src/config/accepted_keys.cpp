#include "config/accepted_keys.h"

namespace kgpu {

const char* to_string(KeyEffect effect) {
  switch (effect) {
    case KeyEffect::Plan: return "plan";
    case KeyEffect::Edits: return "edits";
    case KeyEffect::Preference: return "preferred allocation";
    case KeyEffect::Labels: return "labels";
    case KeyEffect::Discovery: return "discovery";
    case KeyEffect::Daemon: return "daemon";
    case KeyEffect::CompatibilityOnly: return "compatibility only";
  }
  return "?";
}

const std::vector<AcceptedKey>& accepted_keys() {
  using E = KeyEffect;
  static const std::vector<AcceptedKey> table = {
      {"version", E::CompatibilityOnly, "checked (only v1 exists); nothing depends on it"},
      // --- flags ---
      {"flags.migStrategy", E::Plan, "which MIG devices become which resources"},
      {"flags.failOnInitError", E::Daemon, "exit, or keep running without devices, when discovery fails"},
      {"flags.mpsRoot", E::Edits, "Allocate mounts the MPS pipe and shm from it; sharing.mps without it is an error"},
      {"flags.nvidiaDriverRoot", E::Edits, "host paths of device specs; driver files in CDI specs"},
      {"flags.nvidiaDevRoot", E::Edits, "host paths of device specs and device-group nodes"},
      {"flags.deviceDiscoveryStrategy", E::CompatibilityOnly,
       "kgpu always discovers through NVML and sysfs; tegra (NVIDIA's CSV-based Jetson discovery) does not exist"},
      {"flags.gdsEnabled", E::Edits, "NVIDIA_GDS=enabled"},
      {"flags.mofedEnabled", E::Edits, "NVIDIA_MOFED=enabled"},
      {"flags.gdrcopyEnabled", E::Edits, "NVIDIA_GDRCOPY=enabled"},
      {"flags.useNodeFeatureAPI", E::Daemon,
       "labels go to the node's NodeFeature object (nfd.k8s-sigs.io) instead of the feature file"},
      {"flags.plugin.passDeviceSpecs", E::Edits, "device specs in Allocate responses"},
      {"flags.plugin.deviceListStrategy", E::Edits, "envvar, volume mounts, CDI annotations, CDI devices"},
      {"flags.plugin.deviceIDStrategy", E::Edits, "uuid or index in what the runtime sees (never the kubelet IDs)"},
      {"flags.plugin.cdiAnnotationPrefix", E::Edits, "key prefix of the CDI annotation"},
      {"flags.plugin.nvidiaCTKPath", E::Daemon, "hook binary written into the CDI specs"},
      {"flags.plugin.containerDriverRoot", E::Daemon, "where the CDI writer scans the driver files"},
      {"flags.plugin.sharedDevicesAllocationPolicy", E::Preference, "spread or pack replicas and MIG devices"},
      {"flags.gfd.oneshot", E::Daemon, "`kgpu labels` labels once and exits"},
      {"flags.gfd.noTimestamp", E::Labels, "leaves nvidia.com/gfd.timestamp out"},
      {"flags.gfd.sleepInterval", E::Daemon, "time between `kgpu labels` passes"},
      {"flags.gfd.outputFile", E::Daemon, "the feature file labels are written to"},
      {"flags.gfd.machineTypeFile", E::Daemon, "file read for nvidia.com/gpu.machine"},
      // --- resources ---
      {"resources.gpus[].pattern", E::Plan, "GPUs (by product name) renamed"},
      {"resources.gpus[].name", E::Plan, "their resource name"},
      {"resources.mig[].pattern", E::Plan, "MIG profiles renamed"},
      {"resources.mig[].name", E::Plan, "their resource name"},
      // --- sharing ---
      {"sharing.timeSlicing.renameByDefault", E::Plan, "shared resources named <name>.shared"},
      {"sharing.timeSlicing.failRequestsGreaterThanOne", E::Plan, "requests of more than one replica refused"},
      {"sharing.timeSlicing.resources[].name", E::Plan, "the resource shared"},
      {"sharing.timeSlicing.resources[].rename", E::Plan, "the shared resource's name"},
      {"sharing.timeSlicing.resources[].replicas", E::Plan, "IDs per device"},
      {"sharing.timeSlicing.resources[].devices", E::Plan, "which devices are shared"},
      {"sharing.mps.renameByDefault", E::Plan, "shared resources named <name>.shared"},
      {"sharing.mps.failRequestsGreaterThanOne", E::Plan, "requests of more than one replica refused"},
      {"sharing.mps.resources[].name", E::Plan, "the resource shared"},
      {"sharing.mps.resources[].rename", E::Plan, "the shared resource's name"},
      {"sharing.mps.resources[].replicas", E::Plan, "IDs (MPS clients) per GPU"},
      {"sharing.mps.resources[].devices", E::Plan, "which GPUs are shared"},
      // --- imex ---
      {"imex.channelIDs", E::Edits,
       "IMEX channel nodes, NVIDIA_IMEX_CHANNELS, volume-mount markers and CDI names in every allocation"},
      {"imex.required", E::Daemon, "a configured channel that is missing stops the start (else: warned, skipped)"},
      // --- kgpu ---
      {"kgpu.sysfsRoot", E::Daemon, "where discovery reads sysfs"},
      {"kgpu.procRoot", E::Daemon, "where discovery reads procfs"},
      {"kgpu.cdiSpecDir", E::Daemon, "folder of the generated CDI specs"},
      {"kgpu.cdiKind", E::Edits, "CDI device names"},
      {"kgpu.metricsAddr", E::Daemon, "Prometheus metrics and health endpoint"},
      {"kgpu.gpuTelemetry", E::Daemon, "GPU telemetry series on /metrics"},
      {"kgpu.migAllocationPolicy", E::Preference,
       "MIG devices on one parent or spread (alias of sharedDevicesAllocationPolicy for MIG)"},
      {"kgpu.backends", E::Daemon, "which discovery backends run"},
      {"kgpu.labels.enabled", E::Daemon, "the daemon writes node labels"},
      {"kgpu.labels.keepOnExit", E::Daemon, "labels stay when the daemon stops"},
      {"kgpu.dra.enabled", E::Daemon, "kgpu is also the DRA driver for its NVIDIA GPUs"},
      {"kgpu.dra.devicePlugin", E::Daemon, "the device-plugin API is served"},
      {"kgpu.dra.gpus", E::Daemon, "the NVIDIA GPUs DRA owns"},
      {"kgpu.dra.vendors", E::Daemon, "whose GPUs DRA serves"},
      {"kgpu.dra.driver", E::Daemon, "the DRA driver name for NVIDIA GPUs"},
      {"kgpu.dra.amdDriver", E::Daemon, "the DRA driver name for AMD GPUs"},
      {"kgpu.dra.intelDriver", E::Daemon, "the DRA driver name for Intel GPUs"},
      {"kgpu.dra.nvidiaSmiPath", E::Daemon, "the nvidia-smi that sets DRA claims' time-slice intervals"},
      {"kgpu.dra.noExecuteXids", E::Daemon, "XIDs whose DRA device taint evicts the pods using the device"},
      {"kgpu.dra.deviceMetadata", E::Daemon, "device metadata files for prepared claims (KEP-5304)"},
      {"kgpu.dra.mig.dynamic", E::Daemon, "the GPUs DRA publishes with every MIG placement (dynamic MIG)"},
      {"kgpu.dra.sharing.memory.gpus", E::Daemon, "the GPUs DRA publishes for memory shares"},
      {"kgpu.dra.sharing.memory.requestPolicy.default", E::Daemon, "the memory a share takes by default"},
      {"kgpu.dra.sharing.memory.requestPolicy.min", E::Daemon, "the smallest memory share"},
      {"kgpu.dra.sharing.memory.requestPolicy.step", E::Daemon, "the step between memory shares"},
      {"kgpu.dra.sharing.memory.multiprocessorsDefault", E::Daemon, "multiprocessors as a consumable capacity"},
      {"kgpu.dra.sharing.memory.activeThreadPercentage", E::Daemon, "a share's default MPS thread percentage"},
      {"kgpu.dra.sharing.memory.oneNamespacePerGpu", E::Daemon, "a GPU's memory shares kept to one namespace"},
      {"kgpu.health.enabled", E::Daemon, "the health monitor runs"},
      {"kgpu.health.xidsEnabled", E::Daemon, "XID events mark devices unhealthy"},
      {"kgpu.health.ignoredXids", E::Daemon, "XIDs that never mark a device unhealthy"},
      {"kgpu.health.xidActions", E::Daemon, "per-XID actions"},
      {"kgpu.health.recovery.enabled", E::Daemon, "unhealthy devices are re-probed"},
      {"kgpu.health.recovery.probeIntervalMs", E::Daemon, "first re-probe delay"},
      {"kgpu.health.recovery.probeMaxIntervalMs", E::Daemon, "longest re-probe delay"},
      {"kgpu.health.recovery.quietPeriodMs", E::Daemon, "healthy time before re-advertising"},
      {"kgpu.deviceGroups[].resource", E::Discovery, "the resource name of the group's devices"},
      {"kgpu.deviceGroups[].devices", E::Discovery, "device files enumerated, with companions"},
      {"kgpu.deviceGroups[].sharedDevices", E::Edits, "nodes every allocation gets once"},
      {"kgpu.deviceGroups[].replicas", E::Plan, "IDs per device, as time-slicing"},
      {"kgpu.deviceGroups[].permissions", E::Edits, "cgroup permissions of the device specs"},
      {"kgpu.deviceGroups[].mounts[].containerPath", E::Edits, "mount target"},
      {"kgpu.deviceGroups[].mounts[].hostPath", E::Edits, "mount source"},
      {"kgpu.deviceGroups[].mounts[].readOnly", E::Edits, "mount option"},
      {"kgpu.deviceGroups[].env", E::Edits, "environment of the container"},
      {"kgpu.deviceGroups[].sysfs[].path", E::Discovery, "sysfs file a device must match"},
      {"kgpu.deviceGroups[].sysfs[].equals", E::Discovery, "the value it must hold"},
  };
  return table;
}

}  // namespace kgpu
