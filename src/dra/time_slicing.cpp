#include "dra/time_slicing.h"

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

std::vector<TimeSliceSetting> time_slices_to_reset(const std::vector<PreparedClaim>& remaining,
                                                   const PreparedClaim& released) {
  std::vector<TimeSliceSetting> out;
  for (const auto& s : released.time_slicing) {
    const bool still_used = std::any_of(remaining.begin(), remaining.end(), [&](const PreparedClaim& c) {
      return c.ref.uid != released.ref.uid && setting_for(c, s.gpu_uuid) != nullptr;
    });
    if (!still_used) out.push_back({s.gpu_uuid, TimeSliceInterval::Default});
  }
  return out;
}

std::vector<std::string> set_timeslice_argv(const std::string& nvidia_smi, const TimeSliceSetting& setting) {
  return {nvidia_smi,       "compute-policy",  "-i",
          setting.gpu_uuid, "--set-timeslice", std::to_string(static_cast<int>(setting.interval))};
}

}  // namespace kgpu::dra
