// The driver's numbering of /dev/nvidia-caps minors, and the capability files of one MIG instance
// as the driver keeps them: written when the instance is made, removed when it is unmade, so that a
// consumer (kgpu's CDI spec of a dynamic MIG device) finds real nodes. Files go under the fixture
// root named by KGPU_FAKE_NVML_ROOT (the tree kgpu-fake-nvml-fixture wrote); without it, none.
#pragma once
#include <optional>
#include <string>

namespace kgpu::fake_nvml {

inline constexpr unsigned kGiPerGpu = 15;  // GI ids 0..14
inline constexpr unsigned kCiPerGi = 8;    // CI ids 0..7

inline unsigned mig_gi_minor(unsigned gpu_minor, unsigned gi) {
  return 3 + gpu_minor * kGiPerGpu * (1 + kCiPerGi) + gi * (1 + kCiPerGi);
}
inline unsigned mig_ci_minor(unsigned gpu_minor, unsigned gi, unsigned ci) { return mig_gi_minor(gpu_minor, gi) + 1 + ci; }

// "DeviceFileMinor: <minor>..." as /proc/driver/nvidia/capabilities/... hold it.
std::string capability_file_text(unsigned minor);

// The instance's /dev/nvidia-caps/nvidia-cap<N> node and its capabilities/.../access file under
// `root`; `ci` absent: the GPU instance's. Best effort (a test reads what is there).
void write_instance_caps(const std::string& root, unsigned gpu_minor, unsigned gi, std::optional<unsigned> ci);
void remove_instance_caps(const std::string& root, unsigned gpu_minor, unsigned gi, std::optional<unsigned> ci);

}  // namespace kgpu::fake_nvml
