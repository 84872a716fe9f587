#include "dra/sharing/time_slicing.h"

#include <algorithm>

namespace kgpu::dra {
namespace {

const TimeSliceSetting* setting_for(const PreparedClaim& claim, const std::string& gpu_uuid) {
  for (const auto& s : claim.time_slicing)
    if (s.gpu_uuid == gpu_uuid) return &s;
  return nullptr;
}

}  // namespace

Result<std::vector<TimeSliceSetting>> time_slices_to_apply(const std::vector<PreparedClaim>& prepared,
                                                           const PreparedClaim& claim) {
  for (const auto& wanted : claim.time_slicing)
    for (const auto& other : prepared) {
      if (other.ref.uid == claim.ref.uid) continue;
      const TimeSliceSetting* held = setting_for(other, wanted.gpu_uuid);
      if (held && held->interval != wanted.interval)
        return Error::precondition("claim " + claim.ref.uid + " asks for time-slice interval " +
                                   to_string(wanted.interval) + " on " + wanted.gpu_uuid + ", which runs " +
                                   to_string(held->interval) + " for claim " + other.ref.uid);
    }
  return claim.time_slicing;
}

bool sets_gpu(const PreparedClaim& claim, const std::string& gpu_uuid) {
  return setting_for(claim, gpu_uuid) != nullptr ||
         std::find(claim.exclusive_gpus.begin(), claim.exclusive_gpus.end(), gpu_uuid) != claim.exclusive_gpus.end();
}

std::vector<TimeSliceSetting> time_slices_to_reset(const std::vector<PreparedClaim>& remaining,
                                                   const PreparedClaim& released) {
  std::vector<std::string> touched;
  for (const auto& s : released.time_slicing) touched.push_back(s.gpu_uuid);
  for (const auto& uuid : released.exclusive_gpus)
    if (std::find(touched.begin(), touched.end(), uuid) == touched.end()) touched.push_back(uuid);
  std::vector<TimeSliceSetting> out;
  for (const auto& uuid : touched) {
    const bool still_used = std::any_of(remaining.begin(), remaining.end(), [&](const PreparedClaim& c) {
      return c.ref.uid != released.ref.uid && sets_gpu(c, uuid);
    });
    if (!still_used) out.push_back({uuid, TimeSliceInterval::Default});
  }
  return out;
}

std::vector<std::string> set_compute_mode_argv(const std::string& nvidia_smi, const std::string& gpu_uuid,
                                               const std::string& mode) {
  return {nvidia_smi, "-i", gpu_uuid, "-c", mode};
}

std::vector<std::string> set_timeslice_argv(const std::string& nvidia_smi, const TimeSliceSetting& setting) {
  return {nvidia_smi,       "compute-policy",  "-i",
          setting.gpu_uuid, "--set-timeslice", std::to_string(static_cast<int>(setting.interval))};
}

}  // namespace kgpu::dra
