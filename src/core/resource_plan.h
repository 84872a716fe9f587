#pragma once
// The ResourcePlan: what the daemon advertises. Built by the pure function plan(Config, Inventory);
// servers serve it, labels and CDI writers read it. A new plan is diffed against the old one.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/inventory.h"

namespace kgpu {

enum class SharingKind { None, TimeSlicing, Mps };
const char* to_string(SharingKind s);

// One device ID as the kubelet sees it.
struct AdvertisedDevice {
  std::string id;             // "GPU-<uuid>", "GPU-<uuid>::3", "MIG-<uuid>", "0", "1:2" ...
  bool healthy = true;
  std::vector<int64_t> numa_nodes;  // empty: no NUMA preference
  // What backs this ID: position in Inventory::gpus, and the MIG device position when MIG.
  size_t gpu = 0;
  std::optional<size_t> mig;
  int replica = -1;           // replica number for shared resources, -1 when not replicated
  bool operator==(const AdvertisedDevice&) const = default;
};

struct Resource {
  std::string name;           // "nvidia.com/gpu", "nvidia.com/mig-1g.5gb", "amd.com/gpu"
  Vendor vendor = Vendor::Nvidia;
  SharingKind sharing = SharingKind::None;
  int replicas = 1;
  bool fail_requests_greater_than_one = false;
  std::vector<AdvertisedDevice> devices;
  bool operator==(const Resource&) const = default;

  const AdvertisedDevice* find(const std::string& id) const;
};

struct ResourcePlan {
  std::vector<Resource> resources;
  // Problems the planner found but worked around (invalid MIG layout for `single`, a sharing
  // entry that names a missing device). Each is a full sentence for logs and `kgpu devices`.
  std::vector<std::string> problems;
  bool operator==(const ResourcePlan&) const = default;

  const Resource* find(const std::string& name) const;
};

}  // namespace kgpu
