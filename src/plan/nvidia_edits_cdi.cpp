#include "plan/nvidia_edits_cdi.h"

#include <cstdint>
#include <cstdio>

namespace kgpu {

std::string qualified_cdi_name(const std::string& kind, const std::string& device) {
  return kind + "=" + device;
}

std::string cdi_annotation_key(const std::string& prefix, const std::vector<std::string>& names) {
  // FNV-1a, 64 bit: stable across builds and platforms, unlike std::hash.
  uint64_t hash = 14695981039346656037ull;
  auto mix = [&hash](unsigned char c) {
    hash ^= c;
    hash *= 1099511628211ull;
  };
  for (const auto& name : names) {
    for (unsigned char c : name) mix(c);
    mix(',');  // separator, so ["ab","c"] and ["a","bc"] differ
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(hash));
  return prefix + "kgpu_" + hex;
}

}  // namespace kgpu
