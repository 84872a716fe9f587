#pragma once
// A generic device group: operator-declared devices (RDMA, FPGA, ...) served like GPUs.
// Plain values only (Config embeds them), no I/O. YAML shape: see device_groups_yaml.h.
#include <map>
#include <string>
#include <vector>

namespace kgpu {

struct GenericMount {
  std::string container_path;
  std::string host_path;  // absolute host path, NOT under the dev root
  bool read_only = true;
  bool operator==(const GenericMount&) const = default;
};

// Only devices whose sysfs file holds `equals` belong to the group (e.g. the NIC vendor). `path` is
// under the sysfs root; its '*' is replaced like a companion pattern's
// ("/class/infiniband_verbs/uverbs*/device/vendor").
struct GenericSysfsMatch {
  std::string path;
  std::string equals;
  bool operator==(const GenericSysfsMatch&) const = default;
};

struct GenericDeviceGroup {
  std::string resource;  // "example.com/rdma": the resource the planner advertises
  // Device-file patterns, paths as seen in the container ("/dev/infiniband/uverbs*"), resolved under
  // the dev root. The first pattern enumerates devices ('*' and '?' allowed in any component); each
  // further pattern names a companion node of the same device: its '*' is replaced by the text the
  // first pattern's '*' matched ("/dev/fpga*-mgmt" + "/dev/fpga*-user" pairs fpga0-mgmt with
  // fpga0-user). A device whose companion is missing is skipped with a warning.
  std::vector<std::string> devices;
  // Nodes every allocation gets once, shared by all devices ("/dev/infiniband/rdma_cm").
  std::vector<std::string> shared_devices;
  std::vector<GenericMount> mounts;
  std::map<std::string, std::string> env;
  // Advertised IDs per device: "<id>::0" .. "<id>::<replicas-1>", planned exactly like time-slicing
  // replicas (plan/sharing.cpp reads this field from the config; 1 advertises each device once).
  int replicas = 1;
  std::string permissions = "rw";
  std::vector<GenericSysfsMatch> sysfs_matches;  // all must hold
  bool operator==(const GenericDeviceGroup&) const = default;
};

}  // namespace kgpu
