#pragma once
// Parser for `kgpu.deviceGroups` (for the config loader to call). Shape:
//   kgpu:
//     deviceGroups:
//       - resource: example.com/rdma            # required, "<domain>/<name>"
//         devices: ["/dev/infiniband/uverbs*"]  # required; first enumerates, the rest are companions
//         sharedDevices: ["/dev/infiniband/rdma_cm"]
//         replicas: 1                           # IDs per device, 1..kMaxReplicas (time-slicing)
//         permissions: rw                       # cgroup device permissions, subset of "rwm"
//         mounts: [{containerPath: /etc/x, hostPath: /etc/x, readOnly: true}]
//         env: {KEY: value}
//         sysfs: [{path: "/class/infiniband_verbs/uverbs*/device/vendor", equals: "0x15b3"}]
// Errors name the offending key and its 1-based line.
#include <vector>

#include <yaml-cpp/yaml.h>

#include "core/result.h"
#include "sysfs/generic_group.h"

namespace kgpu {

Result<std::vector<GenericDeviceGroup>> parse_device_groups(const YAML::Node& node);

}  // namespace kgpu
