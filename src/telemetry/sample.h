#pragma once
// What one scrape read: per entity (a whole GPU, or one GPU instance of a MIG-enabled GPU) its
// identity labels and the readings NVML gave. A reading NVML did not give stays empty and its
// series is left out of that scrape. Plain values: the reader fills them, exposition renders them.
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "telemetry/fields.h"

namespace kgpu::telemetry {

// One entity's identity, fixed while the inventory is (built by targets_from_inventory).
struct Target {
  unsigned gpu_index = 0;         // NVML index: the `gpu` label (the parent's for a GPU instance)
  std::string uuid;               // GPU uuid: the `UUID` label (the parent's for a GPU instance)
  std::string pci_bus_id;         // "00000000:07:00.0"
  std::string model_name;         // the GPU's product name
  // Set for a GPU instance of a MIG-enabled GPU: GPU_I_ID / GPU_I_PROFILE labels.
  std::optional<unsigned> gpu_instance_id;
  std::string gpu_instance_profile;  // "3g.20gb"
  // The NVML handle to read through: GPU uuid, or the instance's first MIG device uuid.
  std::string read_uuid;
  // Device IDs the plugin may have handed out for this entity, replica suffix removed: the GPU uuid
  // and index, or each MIG device's uuid and "<gpu>:<mig index>". Used for pod attribution.
  std::vector<std::string> device_ids;
  bool operator==(const Target&) const = default;
};

struct Reading {
  std::array<std::optional<double>, kFieldCount> values;
  std::optional<double>& operator[](Field f) { return values[static_cast<size_t>(f)]; }
  const std::optional<double>& operator[](Field f) const { return values[static_cast<size_t>(f)]; }
  void clear() { values.fill(std::nullopt); }
};

// The owner of a device ID, from the kubelet's PodResources API.
struct Owner {
  std::string pod;
  std::string pod_namespace;
  std::string container;
  bool operator==(const Owner&) const = default;
  auto operator<=>(const Owner&) const = default;
};

// Node-wide labels.
struct NodeLabels {
  std::string hostname;        // `Hostname`; empty: label left out (dcgm-exporter --no-hostname)
  std::string driver_version;  // `DCGM_FI_DRIVER_VERSION`
};

}  // namespace kgpu::telemetry
