#include "dra/claims/dynamic_mig_use.h"

#include <algorithm>

namespace kgpu::dra {

namespace {

std::string slices(unsigned start, unsigned size) {
  if (size <= 1) return "memory slice " + std::to_string(start);
  return "memory slices " + std::to_string(start) + "-" + std::to_string(start + size - 1);
}

bool overlaps(unsigned a_start, unsigned a_size, unsigned b_start, unsigned b_size) {
  return a_start < b_start + b_size && b_start < a_start + a_size;
}

std::string describe(const MigInstanceRecord& r) {
  std::string line = r.device + ": ";
  if (r.made)
    line += "made for claim " + r.claim_uid + ": " + r.made->mig_uuid + ", GPU instance " +
            std::to_string(r.made->gpu_instance_id) + ", compute instance " +
            std::to_string(r.made->compute_instance_id);
  else
    line += "being made for claim " + r.claim_uid + " (its intent is recorded, no instance yet)";
  return line + ", " + slices(r.placement.start, r.placement.size) + " of " + r.placement.parent_uuid;
}

}  // namespace

std::set<std::string> made_mig_uuids(const std::vector<MigInstanceRecord>& records) {
  std::set<std::string> out;
  for (const auto& r : records)
    if (r.made && !r.made->mig_uuid.empty()) out.insert(r.made->mig_uuid);
  return out;
}

std::vector<std::string> dynamic_mig_use(const std::vector<DynamicMigLayout>& layouts,
                                         const std::vector<MigInstanceRecord>& records) {
  std::vector<std::string> out;
  for (const auto& r : records) {
    out.push_back(describe(r));
    const bool published = std::any_of(layouts.begin(), layouts.end(),
                                       [&](const DynamicMigLayout& l) { return l.gpu_uuid == r.placement.parent_uuid; });
    if (!published)
      out.push_back(r.device + ": its GPU " + r.placement.parent_uuid +
                    " is not published for dynamic MIG now; the instance stays until the kubelet unprepares claim " +
                    r.claim_uid);
  }
  for (const auto& layout : layouts) {
    std::vector<const MigInstanceRecord*> held;
    for (const auto& r : records)
      if (r.placement.parent_uuid == layout.gpu_uuid) held.push_back(&r);
    size_t placements = 0, free = 0;
    for (const auto& d : layout.devices) {
      if (d.profile.empty()) continue;  // the full GPU
      ++placements;
      free += std::none_of(held.begin(), held.end(), [&](const MigInstanceRecord* r) {
        return overlaps(d.placement_start, d.placement_size, r->placement.start, r->placement.size);
      });
    }
    const bool offers_full = std::any_of(layout.devices.begin(), layout.devices.end(),
                                         [](const DynamicMigDevice& d) { return d.profile.empty(); });
    std::string line = layout.gpu_uuid + " (" + layout.counter_set + "): " + std::to_string(free) + " of " +
                       std::to_string(placements) + " placements free, " + std::to_string(held.size()) +
                       (held.size() == 1 ? " instance" : " instances") + " made by kgpu";
    if (offers_full) line += held.empty() ? "; the full GPU is free" : "; the full GPU is not (it consumes every slice)";
    out.push_back(std::move(line));
  }
  return out;
}

}  // namespace kgpu::dra
