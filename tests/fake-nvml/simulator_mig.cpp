// Dynamic MIG in the simulator: GPU instances created at a placement, compute instances inside
// them, and their destruction, with the rules the driver enforces (valid start slices, no two
// instances on one memory slice, at most 7 compute slices, per-profile instance counts). The
// fleet's Mig::instances stay the one truth; the handle tables follow them.
#include "simulator.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>

#include "cap_files.h"
#include "mig_profiles.h"
#include "mig_state.h"

namespace kgpu::fake_nvml {
namespace {

constexpr unsigned kComputeSlices = 7;  // every simulated product has 7 compute slices

bool overlaps(unsigned a_start, unsigned a_size, unsigned b_start, unsigned b_size) {
  return a_start < b_start + b_size && b_start < a_start + a_size;
}

// Why `profile` cannot go at `placement` now, or NVML_SUCCESS.
nvmlReturn_t placement_check(const Mig& mig, const GiProfile& profile, unsigned placement) {
  if (std::find(profile.placements.begin(), profile.placements.end(), placement) == profile.placements.end())
    return NVML_ERROR_INVALID_ARGUMENT;
  unsigned used_compute = 0, same_profile = 0;
  for (const GpuInstance& gi : mig.instances) {
    // NVML answers a taken placement with INSUFFICIENT_RESOURCES, not ALREADY_EXISTS (NVIDIA's
    // DRA driver notes the same in createMigDevice).
    if (overlaps(gi.placement, gi.profile.memory_slices, placement, profile.memory_slices))
      return NVML_ERROR_INSUFFICIENT_RESOURCES;
    used_compute += gi.profile.compute_slices;
    if (gi.profile.id == profile.id) ++same_profile;
  }
  if (used_compute + profile.compute_slices > kComputeSlices) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  if (same_profile >= profile.instance_count) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  return NVML_SUCCESS;
}

// The driver's id for a new GI: its usual id for the profile and placement, else the lowest free.
unsigned new_gi_id(const Mig& mig, const GiProfile& profile, unsigned placement) {
  auto taken = [&](unsigned id) {
    return std::any_of(mig.instances.begin(), mig.instances.end(), [&](const GpuInstance& g) { return g.id == id; });
  };
  unsigned id = default_gpu_instance_id(profile, placement);
  while (taken(id)) ++id;
  return id;
}

// A MIG uuid unique to this creation: the real driver hands out a new uuid each time an instance
// is made, so a recreated instance must not look like the old one.
std::string created_uuid(const std::string& gpu_uuid, unsigned long long serial) {
  unsigned long long h = 1469598103934665603ULL;
  for (char c : gpu_uuid) h = (h ^ static_cast<unsigned char>(c)) * 1099511628211ULL;
  h = (h ^ (serial + 0x5bd1e995ULL)) * 1099511628211ULL;
  const unsigned long long h2 = (h ^ 0xc2b2ae3d27d4eb4fULL) * 1099511628211ULL;
  char buf[64];
  std::snprintf(buf, sizeof buf, "MIG-%08llx-%04llx-4%03llx-b%03llx-%012llx", h & 0xffffffffULL, (h >> 32) & 0xffffULL,
                (h >> 48) & 0xfffULL, h2 & 0xfffULL, (h2 >> 12) & 0xffffffffffffULL);
  return buf;
}

// The fixture tree whose capability files follow the instances (cap_files.h); "" for none.
std::string caps_root() {
  const char* root = std::getenv("KGPU_FAKE_NVML_ROOT");
  return root ? root : "";
}

}  // namespace

nvmlReturn_t Simulator::create_gpu_instance(unsigned g, const GiProfile& profile, unsigned placement,
                                            nvmlGpuInstance_st** out) {
  Mig& mig = fleet_.gpus[g].mig;
  if (nvmlReturn_t rc = placement_check(mig, profile, placement); rc != NVML_SUCCESS) return rc;
  GpuInstance gi;
  gi.id = new_gi_id(mig, profile, placement);
  gi.profile = profile;
  gi.placement = placement;
  write_instance_caps(caps_root(), fleet_.gpus[g].minor, gi.id, std::nullopt);
  mig.instances.push_back(std::move(gi));
  auto handle = std::make_unique<nvmlGpuInstance_st>();
  handle->device = gpus_[g].get();
  handle->gi = static_cast<unsigned>(mig.instances.size() - 1);
  gpu_instances_.insert(handle.get());
  *out = handle.get();
  gis_[g].push_back(std::move(handle));
  cis_[g].emplace_back();
  save_mig_state(fleet_);
  return NVML_SUCCESS;
}

nvmlReturn_t Simulator::create_compute_instance(nvmlGpuInstance_st* gi_handle, unsigned slices,
                                                nvmlComputeInstance_st** out) {
  const unsigned g = gi_handle->device->gpu;
  GpuInstance& gi = fleet_.gpus[g].mig.instances[gi_handle->gi];
  unsigned used = 0;
  for (const ComputeInstance& c : gi.compute_instances) used += c.slices;
  if (slices == 0 || used + slices > gi.profile.compute_slices) return NVML_ERROR_INSUFFICIENT_RESOURCES;
  if (fleet_.gpus[g].mig.table && mig_order_[g].size() >= fleet_.gpus[g].mig.table->max_mig_devices)
    return NVML_ERROR_INSUFFICIENT_RESOURCES;
  ComputeInstance ci;
  unsigned id = 0;
  while (std::any_of(gi.compute_instances.begin(), gi.compute_instances.end(),
                     [&](const ComputeInstance& c) { return c.id == id; }))
    ++id;
  ci.id = id;
  ci.slices = slices;
  ci.placement = used;
  ci.uuid = created_uuid(fleet_.gpus[g].uuid, ++created_serial_ + mig_state_salt());
  write_instance_caps(caps_root(), fleet_.gpus[g].minor, gi.id, ci.id);
  gi.compute_instances.push_back(std::move(ci));

  auto dev = std::make_unique<nvmlDevice_st>();
  dev->gpu = g;
  dev->gi = static_cast<int>(gi_handle->gi);
  dev->ci = static_cast<int>(gi.compute_instances.size() - 1);
  dev->parent = gpus_[g].get();
  auto handle = std::make_unique<nvmlComputeInstance_st>();
  handle->gpu_instance = gi_handle;
  handle->ci = static_cast<unsigned>(dev->ci);
  handle->mig_device = dev.get();
  devices_.insert(dev.get());
  compute_instances_.insert(handle.get());
  mig_order_[g].push_back(dev.get());
  migs_[g].push_back(std::move(dev));
  *out = handle.get();
  cis_[g][gi_handle->gi].push_back(std::move(handle));
  save_mig_state(fleet_);
  return NVML_SUCCESS;
}

nvmlReturn_t Simulator::destroy_compute_instance(nvmlComputeInstance_st* ci_handle) {
  nvmlGpuInstance_st* gi_handle = ci_handle->gpu_instance;
  const unsigned g = gi_handle->device->gpu;
  const unsigned k = gi_handle->gi;
  const unsigned c = ci_handle->ci;
  nvmlDevice_st* dev = ci_handle->mig_device;
  {
    const GpuInstance& gi = fleet_.gpus[g].mig.instances[k];
    remove_instance_caps(caps_root(), fleet_.gpus[g].minor, gi.id, gi.compute_instances[c].id);
  }
  auto& order = mig_order_[g];
  order.erase(std::remove(order.begin(), order.end(), dev), order.end());
  devices_.erase(dev);
  compute_instances_.erase(ci_handle);
  auto& migs = migs_[g];
  migs.erase(std::remove_if(migs.begin(), migs.end(), [&](const auto& m) { return m.get() == dev; }), migs.end());
  auto& cis = cis_[g][k];
  cis.erase(cis.begin() + c);
  auto& instances = fleet_.gpus[g].mig.instances[k].compute_instances;
  instances.erase(instances.begin() + c);
  // The ones after it moved down one position.
  for (unsigned i = 0; i < cis.size(); ++i) {
    cis[i]->ci = i;
    cis[i]->mig_device->ci = static_cast<int>(i);
  }
  save_mig_state(fleet_);
  return NVML_SUCCESS;
}

nvmlReturn_t Simulator::destroy_gpu_instance(nvmlGpuInstance_st* gi_handle) {
  const unsigned g = gi_handle->device->gpu;
  const unsigned k = gi_handle->gi;
  auto& instances = fleet_.gpus[g].mig.instances;
  // As NVML: a GPU instance with compute instances in it is in use.
  if (!instances[k].compute_instances.empty()) return NVML_ERROR_IN_USE;
  remove_instance_caps(caps_root(), fleet_.gpus[g].minor, instances[k].id, std::nullopt);
  instances.erase(instances.begin() + k);
  gpu_instances_.erase(gi_handle);
  gis_[g].erase(gis_[g].begin() + k);
  cis_[g].erase(cis_[g].begin() + k);
  for (unsigned i = 0; i < gis_[g].size(); ++i) {
    gis_[g][i]->gi = i;
    for (auto& ci : cis_[g][i]) ci->mig_device->gi = static_cast<int>(i);
  }
  save_mig_state(fleet_);
  return NVML_SUCCESS;
}

unsigned Simulator::remaining_capacity(unsigned g, const GiProfile& profile) const {
  // Placements that each fit alone; NVML counts how many more could be made, which for the
  // non-overlapping start slices of one profile is the number of free ones within the limits.
  const Mig& mig = fleet_.gpus[g].mig;
  Mig trial = mig;
  unsigned n = 0;
  for (unsigned p : profile.placements) {
    if (placement_check(trial, profile, p) != NVML_SUCCESS) continue;
    GpuInstance gi;
    gi.profile = profile;
    gi.placement = p;
    trial.instances.push_back(gi);
    ++n;
  }
  return n;
}

nvmlReturn_t Simulator::set_mig_mode(unsigned g, unsigned mode, nvmlReturn_t* activation) {
  Gpu& gpu = fleet_.gpus[g];
  if (!gpu.mig.capable) return NVML_ERROR_NOT_SUPPORTED;
  if (mode != NVML_DEVICE_MIG_ENABLE && mode != NVML_DEVICE_MIG_DISABLE) return NVML_ERROR_INVALID_ARGUMENT;
  if (mode == NVML_DEVICE_MIG_DISABLE && !gpu.mig.instances.empty()) return NVML_ERROR_IN_USE;
  gpu.mig.pending = mode;
  // Hopper and later switch without a reset; an A100 keeps the new mode pending until one.
  if (gpu.architecture >= NVML_DEVICE_ARCH_HOPPER) {
    gpu.mig.mode = mode;
    *activation = NVML_SUCCESS;
  } else {
    *activation = gpu.mig.mode == mode ? NVML_SUCCESS : NVML_ERROR_RESET_REQUIRED;
  }
  save_mig_state(fleet_);
  return NVML_SUCCESS;
}

}  // namespace kgpu::fake_nvml
