#pragma once
// A client of the kubelet's PodResources API (v1 List): which device IDs of which resource the
// kubelet has assigned to each running pod's containers. Used at config switches (held GPUs) and
// by `kgpu devices --live`; meant to be reused by telemetry (per-pod GPU attribution).
#include <chrono>
#include <string>
#include <vector>

#include "core/result.h"

namespace kgpu::podresources {

// One container's devices of one resource.
struct ContainerDevices {
  std::string pod_namespace;
  std::string pod_name;
  std::string container;
  std::string resource;
  std::vector<std::string> device_ids;

  std::string pod() const { return pod_namespace + "/" + pod_name; }
  bool operator==(const ContainerDevices&) const = default;
};

// The PodResources socket of the kubelet whose registration socket is `kubelet_socket`
// (/var/lib/kubelet/device-plugins/kubelet.sock -> /var/lib/kubelet/pod-resources/kubelet.sock).
std::string socket_for(const std::string& kubelet_socket);

// One List call. Errors: Unavailable when nothing serves `socket` (or the kubelet answers
// UNAVAILABLE / RESOURCE_EXHAUSTED, its rate limit), Internal for other gRPC failures.
Result<std::vector<ContainerDevices>> list(const std::string& socket, std::chrono::milliseconds timeout);

}  // namespace kgpu::podresources
