#include "dra/claims/nvml_mig_control.h"

#include <fmt/format.h>

#include "core/safe_file.h"
#include "nvml/mig_facts.h"

namespace kgpu::dra {

namespace {

// GPU instance ids are small (0..14 on every MIG product, the driver's minors numbering); probing
// them by id also finds an instance without a compute instance, which no MIG device walk shows
// (a create cut short between its two steps).
constexpr unsigned kMaxGpuInstanceId = 32;

}  // namespace

Result<std::shared_ptr<const NvmlMigControl>> NvmlMigControl::bind(std::shared_ptr<const NvmlLibrary> nvml,
                                                                   std::string proc_root) {
  auto mig = MigInstances::bind(nvml);
  if (!mig) return mig.error();
  return std::shared_ptr<const NvmlMigControl>(new NvmlMigControl(std::move(nvml), *mig, std::move(proc_root)));
}

Result<std::shared_ptr<const NvmlMigControl>> NvmlMigControl::bind_initialized(std::shared_ptr<NvmlLibrary> nvml,
                                                                               std::string proc_root) {
  if (!nvml) return Error::internal("dynamic MIG: no NVML library");
  if (auto st = nvml->init(); !st) return Error{st.error().code, "dynamic MIG: NVML: " + st.error().message};
  auto mig = MigInstances::bind(nvml);
  if (!mig) {
    nvml->shutdown();
    return mig.error();
  }
  auto control = std::shared_ptr<NvmlMigControl>(new NvmlMigControl(nvml, *mig, std::move(proc_root)));
  control->session_ = std::move(nvml);
  return std::shared_ptr<const NvmlMigControl>(std::move(control));
}

NvmlMigControl::~NvmlMigControl() {
  if (session_) session_->shutdown();
}

Result<nvmlDevice_t> NvmlMigControl::parent(const std::string& uuid) const {
  auto gpu = nvml_->device_by_uuid(uuid);
  if (!gpu) return Error{gpu.error().code, "GPU " + uuid + ": " + gpu.error().message};
  return *gpu;
}

bool NvmlMigControl::switches_without_reset(nvmlDevice_t gpu) const {
  auto arch = nvml_->architecture(gpu);
  return arch && *arch >= NVML_DEVICE_ARCH_HOPPER;
}

Status NvmlMigControl::enable_mig(const std::string& parent_uuid) const {
  auto gpu = parent(parent_uuid);
  if (!gpu) return gpu.error();
  auto mode = nvml_->mig_mode(*gpu);
  if (!mode) return Error{mode.error().code, "GPU " + parent_uuid + ": MIG mode unknown: " + mode.error().message};
  if (mode->current) return ok_status();
  if (!switches_without_reset(*gpu))
    return Error::precondition("GPU " + parent_uuid +
                               " has MIG mode off, and switching it on needs a GPU reset before Hopper; kgpu "
                               "never resets a GPU (turn MIG on, reset, and restart kgpu)");
  auto activation = mig_->set_mig_mode(*gpu, true);
  if (!activation) return Error{activation.error().code, "GPU " + parent_uuid + ": " + activation.error().message};
  if (*activation != NVML_SUCCESS)
    return Error::precondition("GPU " + parent_uuid + ": MIG mode on is pending (" +
                               nvml_->error_string(*activation) + "); it needs a reset kgpu does not make");
  return ok_status();
}

Result<MigInstanceMade> NvmlMigControl::create(const MigPlacement& where) const {
  auto gpu = parent(where.parent_uuid);
  if (!gpu) return gpu.error();
  auto minor = nvml_->minor_number(*gpu);
  if (!minor) return Error{minor.error().code, "GPU " + where.parent_uuid + ": " + minor.error().message};
  // The minors first: a file that does not say them fails the prepare before anything is made.
  auto text = read_regular_file(proc_root_ + "/driver/nvidia-caps/mig-minors", kOwnFileLimit);
  if (!text) return Error{text.error().code, "MIG capability minors: " + text.error().message};
  auto minors = MigMinors::parse(*text);
  if (!minors) return Error{minors.error().code, "MIG capability minors: " + minors.error().message};
  auto made = mig_->create(*gpu, where.profile_id, {where.start, where.size});
  if (!made) return Error{made.error().code, made.error().message};
  auto nodes = mig_capability_nodes(*minors, static_cast<int>(*minor), static_cast<int>(made->gpu_instance_id),
                                    static_cast<int>(made->compute_instance_id));
  if (!nodes) {
    (void)mig_->destroy(*gpu, made->gpu_instance_id, made->compute_instance_id);
    return Error::unavailable(fmt::format("no capability minors for gpu{}/gi{}/ci{} in mig-minors", *minor,
                                          made->gpu_instance_id, made->compute_instance_id));
  }
  return MigInstanceMade{made->gpu_instance_id, made->compute_instance_id, made->mig_uuid, std::move(*nodes)};
}

Status NvmlMigControl::destroy(const std::string& parent_uuid, unsigned gi, unsigned ci) const {
  auto gpu = parent(parent_uuid);
  if (!gpu) return gpu.error();
  auto st = mig_->destroy(*gpu, gi, ci);
  if (!st) return Error{st.error().code, "GPU " + parent_uuid + ": " + st.error().message};
  return ok_status();
}

Result<std::vector<GpuInstanceAt>> NvmlMigControl::gpu_instances(const std::string& parent_uuid) const {
  auto gpu = parent(parent_uuid);
  if (!gpu) return gpu.error();
  std::vector<GpuInstanceAt> out;
  auto mode = nvml_->mig_mode(*gpu);
  if (!mode) return Error{mode.error().code, "GPU " + parent_uuid + ": MIG mode unknown: " + mode.error().message};
  if (!mode->current) return out;  // MIG off: no instance can exist
  for (unsigned id = 0; id < kMaxGpuInstanceId; ++id) {
    auto gi = nvml_->gpu_instance_by_id(*gpu, id);
    if (!gi) {
      if (gi.nvml_code() == NVML_ERROR_NOT_FOUND || gi.nvml_code() == NVML_ERROR_INVALID_ARGUMENT) continue;
      return Error{gi.error().code, "GPU " + parent_uuid + ": " + gi.error().message};
    }
    auto info = nvml_->gpu_instance_info(*gi);
    if (!info) return Error{info.error().code, "GPU " + parent_uuid + ": " + info.error().message};
    out.push_back({info->id, info->profileId, info->placement.start, info->placement.size});
  }
  return out;
}

std::string NvmlMigControl::disable_mig_if_empty(const std::string& parent_uuid) const {
  auto gpu = parent(parent_uuid);
  if (!gpu) return gpu.error().message;
  if (!switches_without_reset(*gpu)) return "MIG mode stays on: switching it off needs a reset before Hopper";
  auto left = gpu_instances(parent_uuid);
  if (!left) return left.error().message;
  if (!left->empty()) return "MIG mode stays on: the GPU still holds " + std::to_string(left->size()) + " instance(s)";
  auto mode = nvml_->mig_mode(*gpu);
  if (mode && !mode->current) return "";
  auto activation = mig_->set_mig_mode(*gpu, false);
  if (!activation) return activation.error().message;
  return "";
}

}  // namespace kgpu::dra
