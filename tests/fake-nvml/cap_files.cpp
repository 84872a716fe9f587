#include "cap_files.h"

#include <filesystem>
#include <fstream>

namespace kgpu::fake_nvml {

namespace {

namespace fs = std::filesystem;

struct Paths {
  fs::path node;
  fs::path access;
  unsigned minor;
};

Paths paths(const std::string& root, unsigned gpu_minor, unsigned gi, std::optional<unsigned> ci) {
  fs::path access = fs::path(root) / "proc/driver/nvidia/capabilities" / ("gpu" + std::to_string(gpu_minor)) / "mig" /
                    ("gi" + std::to_string(gi));
  if (ci) access /= "ci" + std::to_string(*ci);
  access /= "access";
  const unsigned minor = ci ? mig_ci_minor(gpu_minor, gi, *ci) : mig_gi_minor(gpu_minor, gi);
  return {fs::path(root) / "dev/nvidia-caps" / ("nvidia-cap" + std::to_string(minor)), access, minor};
}

}  // namespace

std::string capability_file_text(unsigned minor) {
  return "DeviceFileMinor: " + std::to_string(minor) + "\nDeviceFileMode: 292\nDeviceFileModify: 1\n";
}

void write_instance_caps(const std::string& root, unsigned gpu_minor, unsigned gi, std::optional<unsigned> ci) {
  if (root.empty()) return;
  const Paths p = paths(root, gpu_minor, gi, ci);
  std::error_code ec;
  fs::create_directories(p.node.parent_path(), ec);
  fs::create_directories(p.access.parent_path(), ec);
  std::ofstream(p.node, std::ios::trunc).flush();
  std::ofstream(p.access, std::ios::trunc) << capability_file_text(p.minor);
}

void remove_instance_caps(const std::string& root, unsigned gpu_minor, unsigned gi, std::optional<unsigned> ci) {
  if (root.empty()) return;
  const Paths p = paths(root, gpu_minor, gi, ci);
  std::error_code ec;
  fs::remove(p.node, ec);
  fs::remove(p.access, ec);
  fs::remove(p.access.parent_path(), ec);  // its folder, when empty now (a GI's once its CIs' are gone)
}

}  // namespace kgpu::fake_nvml
