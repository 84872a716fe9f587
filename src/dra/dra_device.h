#pragma once
// The DRA face of the inventory as plain values: what one driver publishes in its node's pool,
// independent of the resource.k8s.io API version that carries it. Comparing two DriverPools says
// whether anything must be written to the API server.
#include <cstdint>
#include <map>
#include <string>
#include <variant>
#include <vector>

namespace kgpu::dra {

// A ResourceSlice DeviceAttribute holds exactly one of these. Version is a semver 2.0.0 string.
struct VersionString {
  std::string value;
  bool operator==(const VersionString&) const = default;
};
using AttributeValue = std::variant<std::string, int64_t, bool, VersionString>;

struct DraDevice {
  std::string name;  // DNS label, unique in the pool ("gpu-0", "gpu-0-mig-1g5gb-13-0")
  // Qualified names: unqualified ones belong to the driver's domain ("uuid"), others carry
  // their own ("resource.kubernetes.io/pcieRoot").
  std::map<std::string, AttributeValue> attributes;
  std::map<std::string, uint64_t> capacity;  // published as BinarySI quantities
  bool operator==(const DraDevice&) const = default;
};

// Everything one driver publishes for one node: a single pool named after the node.
struct DriverPool {
  std::string driver;  // "gpu.nvidia.com"
  std::string pool;    // the node name
  std::vector<DraDevice> devices;
  bool operator==(const DriverPool&) const = default;
};

}  // namespace kgpu::dra
