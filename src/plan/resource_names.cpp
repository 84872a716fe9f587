#include "plan/resource_names.h"

#include <algorithm>

namespace kgpu {

bool wildcard_match(std::string_view pattern, std::string_view text) {
  // Iterative glob with single-star backtracking: linear in practice, no regex compilation per call.
  size_t p = 0, t = 0, star = std::string_view::npos, mark = 0;
  while (t < text.size()) {
    if (p < pattern.size() && pattern[p] == '*') {
      star = p++;
      mark = t;
    } else if (p < pattern.size() && pattern[p] == text[t]) {
      ++p;
      ++t;
    } else if (star != std::string_view::npos) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.size() && pattern[p] == '*') ++p;
  return p == pattern.size();
}

std::optional<std::string> match_pattern(const std::vector<ResourcePattern>& patterns, std::string_view text) {
  for (const auto& p : patterns)
    if (wildcard_match(p.pattern, text)) return p.name;
  return std::nullopt;
}

std::string mixed_mig_resource_name(std::string_view profile) {
  std::string name = "nvidia.com/mig-";
  name.append(profile);
  std::replace(name.begin(), name.end(), '+', '.');
  return name;
}

std::string nvidia_gpu_resource_name(const Config& config, const Gpu& gpu) {
  if (auto name = match_pattern(config.gpu_resources, gpu.product)) return *name;
  return "nvidia.com/gpu";
}

std::string mig_resource_name(const Config& config, std::string_view profile) {
  if (auto name = match_pattern(config.mig_resources, profile)) return *name;
  return config.mig_strategy == MigStrategy::Mixed ? mixed_mig_resource_name(profile) : "nvidia.com/gpu";
}

std::optional<std::string> vendor_resource_name(const Gpu& gpu, std::string* why) {
  switch (gpu.vendor) {
    case Vendor::Nvidia: return "nvidia.com/gpu";
    case Vendor::Amd: return "amd.com/gpu";
    case Vendor::Intel: {
      const auto it = gpu.attributes.find("driver");
      if (it == gpu.attributes.end() || it->second.empty()) {
        if (why) *why = "its driver (i915 or xe) is unknown";
        return std::nullopt;
      }
      return "gpu.intel.com/" + it->second;
    }
    case Vendor::Generic: {
      const auto it = gpu.attributes.find("resource");
      if (it == gpu.attributes.end() || it->second.empty()) {
        if (why) *why = "its backend gave no resource name";
        return std::nullopt;
      }
      return it->second;
    }
  }
  if (why) *why = "its vendor is unknown";
  return std::nullopt;
}

}  // namespace kgpu
