#pragma once
// DynamicMigControl over the NVML library kgpu loaded (MigInstances for the calls that make and
// unmake instances, NvmlLibrary for the rest), and the driver's mig-minors file for the
// /dev/nvidia-caps nodes of a new instance (as discovery gives static MIG devices theirs).
#include <memory>
#include <string>

#include "dra/claims/dynamic_mig_control.h"
#include "nvml/mig_instances.h"
#include "nvml/nvml_library.h"

namespace kgpu::dra {

class NvmlMigControl final : public DynamicMigControl {
 public:
  // `proc_root`: where /proc/driver/nvidia-caps/mig-minors is read ("/proc", or a test's tree).
  static Result<std::shared_ptr<const NvmlMigControl>> bind(std::shared_ptr<const NvmlLibrary> nvml,
                                                            std::string proc_root);
  // As bind(), holding an NVML session of its own for its lifetime: discovery releases its session
  // after each pass, and a prepare must not depend on another thread's.
  static Result<std::shared_ptr<const NvmlMigControl>> bind_initialized(std::shared_ptr<NvmlLibrary> nvml,
                                                                        std::string proc_root);
  ~NvmlMigControl() override;
  NvmlMigControl(const NvmlMigControl&) = delete;
  NvmlMigControl& operator=(const NvmlMigControl&) = delete;

  Status enable_mig(const std::string& parent_uuid) const override;
  Result<MigInstanceMade> create(const MigPlacement& where) const override;
  Status destroy(const std::string& parent_uuid, unsigned gi, unsigned ci) const override;
  Result<std::vector<GpuInstanceAt>> gpu_instances(const std::string& parent_uuid) const override;
  std::string disable_mig_if_empty(const std::string& parent_uuid) const override;

  const MigInstances& instances() const { return *mig_; }

 private:
  NvmlMigControl(std::shared_ptr<const NvmlLibrary> nvml, std::shared_ptr<const MigInstances> mig, std::string proc_root)
      : nvml_(std::move(nvml)), mig_(std::move(mig)), proc_root_(std::move(proc_root)) {}
  Result<nvmlDevice_t> parent(const std::string& uuid) const;
  // Hopper and later switch MIG mode at once; earlier GPUs need a reset.
  bool switches_without_reset(nvmlDevice_t gpu) const;

  std::shared_ptr<const NvmlLibrary> nvml_;
  std::shared_ptr<const MigInstances> mig_;
  std::string proc_root_;
  std::shared_ptr<NvmlLibrary> session_;  // shut down with this object; null: none held
};

}  // namespace kgpu::dra
