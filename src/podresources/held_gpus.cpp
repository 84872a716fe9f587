#include "podresources/held_gpus.h"

#include <set>
#include <string_view>
#include <unordered_set>

namespace kgpu::podresources {

namespace {

// Every (resource, device ID) a plan advertises, for lookups in O(1): a plan may hold tens of
// thousands of replicas, and each of them is looked up once per config switch.
class AdvertisedIds {
 public:
  explicit AdvertisedIds(const ResourcePlan& plan) {
    for (const auto& r : plan.resources)
      for (const auto& d : r.devices) keys_.insert(key(r.name, d.id));
  }
  bool contains(const std::string& resource, const std::string& id) const { return keys_.contains(key(resource, id)); }

 private:
  // '\0' cannot occur in a resource name, so the pair is unambiguous.
  static std::string key(const std::string& resource, const std::string& id) { return resource + '\0' + id; }
  std::unordered_set<std::string> keys_;
};

}  // namespace

void HeldGpus::served(const ResourcePlan& plan) {
  for (const auto& r : plan.resources)
    for (const auto& d : r.devices) known_[{r.name, d.id}] = d.gpu;
}

bool HeldGpus::needs_check(const ResourcePlan& next) const {
  if (known_.empty()) return false;
  AdvertisedIds advertised(next);
  for (const auto& [key, gpu] : known_)
    if (!advertised.contains(key.first, key.second)) return true;
  return false;
}

ResourcePlan HeldGpus::withhold(ResourcePlan next, const std::vector<ContainerDevices>& pods) {
  holds_.clear();
  std::set<std::pair<std::string, std::string>> still_held;
  AdvertisedIds advertised(next);
  for (const auto& c : pods)
    for (const auto& id : c.device_ids) {
      if (advertised.contains(c.resource, id)) continue;  // advertised as before: the kubelet knows it is taken
      auto it = known_.find({c.resource, id});
      if (it == known_.end()) continue;  // not an ID kgpu served (another plugin's resource)
      holds_.push_back({c.resource, id, it->second, c.pod()});
      still_held.insert(it->first);
    }
  // Only IDs some pod still holds need remembering; served() adds the new plan's.
  std::erase_if(known_, [&](const auto& entry) { return !still_held.contains(entry.first); });

  std::set<size_t> gpus;
  for (const auto& h : holds_) gpus.insert(h.gpu);
  for (auto& r : next.resources)
    for (auto& d : r.devices)
      if (gpus.contains(d.gpu)) d.healthy = false;
  for (const auto& h : holds_) next.problems.push_back(describe(h));
  return next;
}

std::string describe(const Hold& hold) {
  return "GPU " + std::to_string(hold.gpu) + " is still held by pod " + hold.pod + " as " + hold.resource + " " +
         hold.id + " from the previous config; its devices are advertised Unhealthy until that pod is gone";
}

}  // namespace kgpu::podresources
