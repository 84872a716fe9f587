#include "plan/plan.h"

#include <unordered_set>

#include "plan/message_size.h"
#include "plan/mig.h"
#include "plan/plan_builder.h"
#include "plan/resource_names.h"
#include "plan/sharing.h"

namespace kgpu {

namespace {

void add_other_vendors(const Inventory& inventory, planner::ResourceMap& resources,
                       std::vector<std::string>& problems) {
  for (size_t i = 0; i < inventory.gpus.size(); ++i) {
    const Gpu& g = inventory.gpus[i];
    if (g.vendor == Vendor::Nvidia) continue;
    std::string why;
    const auto name = vendor_resource_name(g, &why);
    if (!name) {
      problems.push_back(std::string(to_string(g.vendor)) + " " + planner::describe_gpu(g) +
                         " is not advertised: " + why + ".");
      continue;
    }
    planner::add_device(resources, *name, g.vendor, planner::gpu_device(inventory, i));
  }
}

// The kubelet keys devices by ID: two devices with one ID (a backend bug, a UUID clash between
// vendors' fallback IDs) would silently merge. Keep the first, report the rest.
void drop_duplicate_ids(Resource& r, std::vector<std::string>& problems) {
  std::unordered_set<std::string> seen;
  seen.reserve(r.devices.size());
  std::erase_if(r.devices, [&](const AdvertisedDevice& d) {
    if (seen.insert(d.id).second) return false;
    problems.push_back("Resource " + r.name + " has device ID " + d.id + " twice; only the first is advertised.");
    return true;
  });
}

}  // namespace

ResourcePlan plan(const Config& config, const Inventory& inventory) {
  ResourcePlan out;
  planner::ResourceMap resources;
  planner::add_nvidia_resources(config, inventory, resources, out.problems);
  add_other_vendors(inventory, resources, out.problems);
  planner::apply_sharing(config, inventory, resources, out.problems);
  out.resources.reserve(resources.size());
  for (auto& [name, r] : resources) {
    drop_duplicate_ids(r, out.problems);
    // Replicas were bounded in apply_sharing(); a node with this many physical devices has nothing
    // left to refuse, but must not fail silently (the kubelet drops the whole message).
    if (const size_t bytes = list_and_watch_bytes(r); bytes > kKubeletMaxMessageBytes)
      out.problems.push_back("Resource " + r.name + " has " + std::to_string(r.devices.size()) +
                             " devices; their list takes " + std::to_string(bytes) + " bytes, over the kubelet's " +
                             std::to_string(kKubeletMaxMessageBytes) +
                             "-byte gRPC message limit, so the kubelet will see none of them.");
    if (!r.devices.empty()) out.resources.push_back(std::move(r));
  }
  return out;
}

}  // namespace kgpu
