#pragma once
// Keeping GPUs that running pods still hold out of a new plan. The kubelet tracks allocations by
// device ID: when a config switch changes the IDs of a GPU (e.g. GPU-x becomes GPU-x::0..3 under
// time-slicing, or MIG devices), the kubelet no longer knows that a running pod holds GPU-x and
// would hand its new IDs to other pods. HeldGpus remembers which GPU every served ID stood for;
// given what pods hold (PodResources List), it marks Unhealthy every device of the new plan on a
// GPU that a pod holds under an ID the new plan no longer advertises, until that pod is gone.
// Pure: the caller does the List call when needs_check() says so.
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "core/resource_plan.h"
#include "podresources/client.h"

namespace kgpu::podresources {

struct Hold {
  std::string resource;  // the resource the pod got the device from
  std::string id;        // the ID it holds, no longer advertised
  size_t gpu = 0;        // Inventory::gpus position behind that ID
  std::string pod;       // "namespace/name"
  bool operator==(const Hold&) const = default;
};

class HeldGpus {
 public:
  // Records the IDs of the plan now being served and the GPU behind each.
  void served(const ResourcePlan& plan);
  // True when `next` leaves out an ID a served plan had: a pod may hold it, so ask PodResources.
  bool needs_check(const ResourcePlan& next) const;
  // Marks Unhealthy, with a problem naming the pod, every device of `next` on a GPU that one of
  // `pods` holds under an ID `next` does not advertise. Forgets the IDs no pod holds any more.
  ResourcePlan withhold(ResourcePlan next, const std::vector<ContainerDevices>& pods);
  // The holds found by the last withhold().
  const std::vector<Hold>& holds() const { return holds_; }

 private:
  std::map<std::pair<std::string, std::string>, size_t> known_;  // (resource, id) -> gpu
  std::vector<Hold> holds_;
};

// The sentence logged and shown for a hold.
std::string describe(const Hold& hold);

}  // namespace kgpu::podresources
