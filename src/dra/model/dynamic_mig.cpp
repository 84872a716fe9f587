#include "dra/model/dynamic_mig.h"

#include <algorithm>
#include <map>

namespace kgpu::dra {
namespace {

// NVIDIA's capacity names and the counter names it derives from them (camelCase to DNS: counters
// may hold hyphens, capacities not).
struct Dimension {
  const char* capacity;
  const char* counter;
  uint64_t MigProfileFacts::*field;
};
constexpr Dimension kDimensions[] = {
    {"copyEngines", "copy-engines", &MigProfileFacts::copy_engines},
    {"decoders", "decoders", &MigProfileFacts::decoders},
    {"encoders", "encoders", &MigProfileFacts::encoders},
    {"jpegEngines", "jpeg-engines", &MigProfileFacts::jpeg_engines},
    {"memory", "memory", &MigProfileFacts::memory_bytes},
    {"multiprocessors", "multiprocessors", &MigProfileFacts::multiprocessors},
    {"ofaEngines", "ofa-engines", &MigProfileFacts::ofa_engines},
};

std::string memory_slice(unsigned i) { return "memory-slice-" + std::to_string(i); }

void sort_by_name(std::vector<Counter>& v) {
  std::sort(v.begin(), v.end(), [](const Counter& a, const Counter& b) { return a.name < b.name; });
}

// RFC 1123 as NVIDIA's toRFC1123Compliant: lower case, anything else than [a-z0-9-.] a hyphen.
std::string rfc1123(std::string s) {
  for (char& c : s) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    const bool ok = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.';
    if (!ok) c = '-';
  }
  while (!s.empty() && s.front() == '-') s.erase(s.begin());
  while (!s.empty() && (s.back() == '-' || s.back() == '.')) s.pop_back();
  return s;
}

}  // namespace

std::string dynamic_mig_device_name(unsigned minor, const std::string& profile, unsigned profile_id, unsigned start) {
  std::string p = profile;
  p.erase(std::remove(p.begin(), p.end(), '.'), p.end());
  return "gpu-" + std::to_string(minor) + "-mig-" + rfc1123(p) + "-" + std::to_string(profile_id) + "-" +
         std::to_string(start);
}

std::string dynamic_mig_counter_set_name(unsigned minor) { return "gpu-" + std::to_string(minor) + "-counter-set"; }

DynamicMigLayout dynamic_mig_layout(const DynamicMigGpuFacts& gpu) {
  DynamicMigLayout out;
  out.gpu_minor = gpu.minor;
  out.gpu_uuid = gpu.uuid;
  out.counter_set = dynamic_mig_counter_set_name(gpu.minor);
  // The set holds each dimension's largest value over all profiles (the whole GPU's), and one
  // counter per memory slice; the number of slices is the largest placement size seen.
  std::map<std::string, uint64_t> max_capacity;
  unsigned memory_slices = 0;
  for (const auto& p : gpu.profiles) {
    if (p.placement_starts.empty()) continue;
    for (const auto& d : kDimensions) max_capacity[d.capacity] = std::max(max_capacity[d.capacity], p.*(d.field));
    memory_slices = std::max(memory_slices, p.placement_size);
  }
  if (max_capacity.empty()) return out;  // nothing to partition: not a dynamic GPU
  for (const auto& d : kDimensions) out.counters.push_back({d.counter, max_capacity[d.capacity]});
  for (unsigned i = 0; i < memory_slices; ++i) out.counters.push_back({memory_slice(i), 1});
  sort_by_name(out.counters);

  if (gpu.offer_full_gpu) {
    DynamicMigDevice full;
    full.name = "gpu-" + std::to_string(gpu.minor);
    for (const auto& d : kDimensions) full.capacity.push_back({d.capacity, max_capacity[d.capacity]});
    full.consumes = out.counters;  // all of it: the whole GPU excludes every placement
    full.placement_size = memory_slices;
    out.devices.push_back(std::move(full));
  }
  for (const auto& p : gpu.profiles) {
    for (unsigned start : p.placement_starts) {
      DynamicMigDevice d;
      d.name = dynamic_mig_device_name(gpu.minor, p.name, p.id, start);
      d.profile = p.name;
      d.profile_id = p.id;
      d.placement_start = start;
      d.placement_size = p.placement_size;
      for (const auto& dim : kDimensions) {
        d.capacity.push_back({dim.capacity, p.*(dim.field)});
        d.consumes.push_back({dim.counter, p.*(dim.field)});
      }
      for (unsigned i = start; i < start + p.placement_size; ++i) d.consumes.push_back({memory_slice(i), 1});
      sort_by_name(d.capacity);
      sort_by_name(d.consumes);
      out.devices.push_back(std::move(d));
    }
  }
  std::sort(out.devices.begin(), out.devices.end(),
            [](const DynamicMigDevice& a, const DynamicMigDevice& b) { return a.name < b.name; });
  return out;
}

}  // namespace kgpu::dra
