#include "labels/label_changes.h"

#include <set>

namespace kgpu {

std::vector<std::string> changed_label_keys(const Labels& before, const Labels& after) {
  std::set<std::string> keys;
  for (const auto& [key, value] : after) {
    const auto old = before.find(key);
    if (old == before.end() || old->second != value) keys.insert(key);
  }
  for (const auto& [key, value] : before)
    if (!after.count(key)) keys.insert(key);
  keys.erase("nvidia.com/gfd.timestamp");
  return {keys.begin(), keys.end()};
}

}  // namespace kgpu
