#pragma once
// kgpu.dra.mig.dynamic on a node: NVML asked for the profiles of the GPUs the key names, and the
// GPUs published for dynamic MIG chosen from them (dra/model/dynamic_mig_select.h). Shared by the
// daemon (every plan) and `kgpu devices -o dra`.
#include <map>
#include <memory>
#include <set>
#include <string>

#include "config/config.h"
#include "core/inventory.h"
#include "dra/model/dynamic_mig_select.h"

namespace kgpu {
class NvmlLibrary;
class MigInstances;
}  // namespace kgpu

namespace kgpu::cli {

class DynamicMigFacts {
 public:
  // `nvml` null (no NVIDIA driver loaded): every named GPU is not dynamic, saying so.
  // `kgpu_created`: the MIG uuids of the instances kgpu made for prepared claims.
  dra::DynamicMigSelection select(const Config& config, const Inventory& inventory,
                                  const std::shared_ptr<NvmlLibrary>& nvml, const std::set<std::string>& kgpu_created);

 private:
  // A GPU's profiles do not change while it is in the node: asked once per GPU (successes only).
  std::map<std::string, dra::DynamicMigProbe> known_;
  std::shared_ptr<const MigInstances> mig_;
  std::shared_ptr<NvmlLibrary> bound_to_;  // the library mig_ was bound from
};

}  // namespace kgpu::cli
