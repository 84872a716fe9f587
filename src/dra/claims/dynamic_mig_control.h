#pragma once
// What the claim store needs of NVML to prepare dynamic MIG devices (issue 42): the GPU instance at
// a placement and its compute instance made and unmade, the instances a GPU holds, MIG mode. An
// interface, so that the store stays free of NVML types and its logic can be read (and tested
// against the fake NVML) apart from the bindings; the implementation is nvml_mig_control.h.
// Parents are named by GPU UUID: handles do not survive a restart, UUIDs do.
#include <optional>
#include <string>
#include <vector>

#include "core/inventory.h"
#include "core/result.h"

namespace kgpu::dra {

// Where an instance goes: a GPU-instance profile at a memory-slice placement of a parent GPU.
struct MigPlacement {
  std::string parent_uuid;
  unsigned profile_id = 0;
  unsigned start = 0;
  unsigned size = 0;
  bool operator==(const MigPlacement&) const = default;
};

// What create() made: the ids that find it again, its MIG device's uuid, and the two
// /dev/nvidia-caps nodes (GI and CI access) its containers need.
struct MigInstanceMade {
  unsigned gpu_instance_id = 0;
  unsigned compute_instance_id = 0;
  std::string mig_uuid;
  std::vector<DeviceNodeRef> capability_nodes;
  bool operator==(const MigInstanceMade&) const = default;
};

// A GPU instance as NVML lists it on its parent.
struct GpuInstanceAt {
  unsigned id = 0;
  unsigned profile_id = 0;
  unsigned start = 0;
  unsigned size = 0;
  bool operator==(const GpuInstanceAt&) const = default;
};

class DynamicMigControl {
 public:
  virtual ~DynamicMigControl() = default;
  // MIG mode on, where it is off and NVML switches it without a reset (Hopper and later); an
  // Error saying why not otherwise (an Ampere GPU would need a reset: kgpu never resets a GPU).
  virtual Status enable_mig(const std::string& parent_uuid) const = 0;
  // The GPU instance at the placement and one compute instance spanning it; a failure leaves
  // nothing behind and keeps NVML's reason (a taken placement: INSUFFICIENT_RESOURCES).
  virtual Result<MigInstanceMade> create(const MigPlacement& where) const = 0;
  // Compute instance `ci` of GPU instance `gi`, then the GPU instance; already gone is done.
  virtual Status destroy(const std::string& parent_uuid, unsigned gi, unsigned ci) const = 0;
  virtual Result<std::vector<GpuInstanceAt>> gpu_instances(const std::string& parent_uuid) const = 0;
  // MIG mode off again once the GPU holds no instance, where that takes effect without a reset;
  // anything else (an instance left, an Ampere GPU) leaves it as it is. Best effort: the reason
  // when it was not switched, "" when it was.
  virtual std::string disable_mig_if_empty(const std::string& parent_uuid) const = 0;
};

}  // namespace kgpu::dra
