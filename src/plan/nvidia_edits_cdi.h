#pragma once
// CDI naming shared by the Allocate edits (plan/nvidia_edits.cpp) and the spec writer (cdi/): both
// must spell a device's qualified name identically or the runtime finds no such device.
#include <string>
#include <vector>

namespace kgpu {

// "<kind>=<device>", e.g. "k8s.device-plugin.nvidia.com/gpu=GPU-8f9c...".
std::string qualified_cdi_name(const std::string& kind, const std::string& device);

// The cdi-annotations key for a set of qualified names: "<prefix>kgpu_<16 hex digits>". The suffix
// is a hash of the names (NVIDIA uses a random UUID), so the same allocation always produces the
// same response, and it stays well inside the 63-character limit of an annotation name.
std::string cdi_annotation_key(const std::string& prefix, const std::vector<std::string>& names);

}  // namespace kgpu
