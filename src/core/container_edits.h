#pragma once
// What a container receives for an allocation: the vendor-neutral form of the kubelet's
// ContainerAllocateResponse, built by pure planning code and converted to protobuf at the edge.
#include <map>
#include <string>
#include <vector>

namespace kgpu {

struct Mount {
  std::string container_path;
  std::string host_path;
  bool read_only = true;
  bool operator==(const Mount&) const = default;
};

struct DeviceSpec {
  std::string container_path;
  std::string host_path;
  std::string permissions = "rw";
  // Hand this node out only if host_path exists when the container is created (NVIDIA's rule for
  // /dev/nvidiactl, /dev/nvidia-uvm, /dev/nvidia-uvm-tools, /dev/nvidia-modeset: the UVM nodes
  // appear lazily, and a DeviceSpec whose host path is missing fails container creation). Planning
  // stays pure and only marks the spec; the Allocate path resolves it with a presence check
  // (resolve_optional_devices in plan/allocate.h), which also clears the mark.
  bool only_if_present = false;
  bool operator==(const DeviceSpec&) const = default;
};

struct ContainerEdits {
  std::map<std::string, std::string> envs;
  std::vector<Mount> mounts;
  std::vector<DeviceSpec> devices;
  std::map<std::string, std::string> annotations;
  std::vector<std::string> cdi_devices;  // fully qualified CDI names
  bool operator==(const ContainerEdits&) const = default;
};

}  // namespace kgpu
