#pragma once
// Extended-resource names as operators write them in sharing/resources entries: "gpu" and
// "nvidia.com/gpu" are the same resource. The kubelet rejects invalid names at registration time,
// long after the config was accepted; we reject them while loading, with the reason.
#include <string>

#include "core/result.h"

namespace kgpu {

inline constexpr const char* kNvidiaResourcePrefix = "nvidia.com/";
inline constexpr size_t kMaxResourceNameLength = 63;

// Adds "nvidia.com/" to a bare name, then checks: at most 63 characters in all; the domain a DNS
// subdomain outside kubernetes.io; the name lowercase alphanumerics, '-' and '.', starting and
// ending with an alphanumeric (it becomes part of the plugin's socket file name).
Result<std::string> normalise_resource_name(const std::string& name);

}  // namespace kgpu
