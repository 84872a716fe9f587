#include "telemetry/attribution.h"

#include <algorithm>
#include <string_view>
#include <unordered_map>

#include "plan/device_ids.h"

namespace kgpu::telemetry {

std::vector<std::vector<Owner>> attribute(const std::vector<Target>& targets,
                                          const std::vector<ContainerDevices>& assignments) {
  std::vector<std::vector<Owner>> owners(targets.size());
  if (assignments.empty()) return owners;
  std::unordered_map<std::string_view, size_t> by_id;
  for (size_t i = 0; i < targets.size(); ++i) {
    for (const auto& id : targets[i].device_ids) by_id.emplace(id, i);
  }
  for (const auto& c : assignments) {
    for (const auto& id : c.device_ids) {
      auto it = by_id.find(strip_replica(id));
      if (it == by_id.end()) continue;
      Owner owner{c.pod_name, c.pod_namespace, c.container};
      auto& list = owners[it->second];
      if (std::find(list.begin(), list.end(), owner) == list.end()) list.push_back(std::move(owner));
    }
  }
  for (auto& list : owners) std::sort(list.begin(), list.end());
  return owners;
}

}  // namespace kgpu::telemetry
