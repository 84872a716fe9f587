#pragma once
// Where the sysfs backends look. Production: sys="/sys", dev="/"; tests point both at fixture trees.
#include <string>

namespace kgpu {

struct SysfsRoots {
  std::string sys = "/sys";  // the sysfs mount
  std::string dev = "/";     // the root under which "/dev/..." lives (Config::dev_root())
  bool operator==(const SysfsRoots&) const = default;
};

}  // namespace kgpu
