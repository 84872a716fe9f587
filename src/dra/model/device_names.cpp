#include "dra/model/device_names.h"

#include <cctype>

namespace kgpu::dra {

namespace {

bool lower_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

}  // namespace

bool is_dns_label(const std::string& s) {
  if (s.empty() || s.size() > 63) return false;
  if (!lower_alnum(s.front()) || !lower_alnum(s.back())) return false;
  for (char c : s)
    if (!lower_alnum(c) && c != '-') return false;
  return true;
}

bool is_dns_subdomain(const std::string& s) {
  if (s.empty() || s.size() > 253) return false;
  size_t start = 0;
  while (true) {
    const size_t dot = s.find('.', start);
    if (!is_dns_label(s.substr(start, dot == std::string::npos ? std::string::npos : dot - start))) return false;
    if (dot == std::string::npos) return true;
    start = dot + 1;
  }
}

std::string gpu_device_name(const Gpu& gpu) {
  return "gpu-" + std::to_string(gpu.minor >= 0 ? gpu.minor : gpu.index);
}

std::string mig_device_name(const Gpu& parent, const MigDevice& mig) {
  // Appended in place: this runs for every MIG device on every health event.
  std::string name = gpu_device_name(parent);
  name.reserve(name.size() + mig.profile.size() + 32);
  name += "-mig-";
  const size_t profile_start = name.size();
  for (char c : mig.profile) {
    const char l = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (l == '.') continue;
    name += lower_alnum(l) ? l : '-';
  }
  // Trimmed of '-' at both ends, as NVIDIA's driver trims the profile part.
  while (name.size() > profile_start && name.back() == '-') name.pop_back();
  size_t lead = profile_start;
  while (lead < name.size() && name[lead] == '-') ++lead;
  name.erase(profile_start, lead - profile_start);
  if (name.size() == profile_start) name += "unknown";
  const bool placed = mig.gi_profile_id >= 0 && mig.placement_start >= 0;
  name += '-';
  name += std::to_string(placed ? mig.gi_profile_id : mig.gpu_instance_id);
  name += '-';
  name += std::to_string(placed ? mig.placement_start : mig.compute_instance_id);
  if (placed && mig.compute_instance_slices > 0 && mig.compute_instance_slices < mig.gpu_instance_slices) {
    name += '-';
    name += std::to_string(mig.compute_instance_id);
  }
  return name;
}

}  // namespace kgpu::dra
