#pragma once
// Container edits for the devices behind an allocation. Pure functions, no I/O.
//  - nvidia_device_edits (plan/nvidia_edits.cpp): deviceListStrategy, deviceIDStrategy,
//    passDeviceSpecs, CDI names for NVIDIA GPUs and MIG devices.
//  - vendor_device_edits (plan/vendor_edits.cpp): AMD, Intel and generic device groups.
// allocate() (plan/allocate.h) validates the request, maps IDs to BackingDevices and calls these.
#include <cstddef>
#include <optional>
#include <vector>

#include "config/config.h"
#include "core/container_edits.h"
#include "core/inventory.h"
#include "core/resource_plan.h"

namespace kgpu {

// One physical device behind one or more advertised IDs (replicas of a GPU collapse to one).
struct BackingDevice {
  size_t gpu = 0;                 // position in Inventory::gpus
  std::optional<size_t> mig;      // position in Gpu::mig_devices
  bool operator==(const BackingDevice&) const = default;
};

ContainerEdits nvidia_device_edits(const Config& config, const Inventory& inventory,
                                   const std::vector<BackingDevice>& devices);

ContainerEdits vendor_device_edits(const Config& config, const Inventory& inventory,
                                   const Resource& resource, const std::vector<BackingDevice>& devices);

}  // namespace kgpu
