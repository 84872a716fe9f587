#pragma once
// The one piece of CDI generation that looks at the file system: which driver files exist for the
// node's driver version. Its result is a plain value, so the spec builder stays pure and testable
// against a fake driver root.
#include <string>
#include <vector>

#include "core/result.h"

namespace kgpu {

// Paths are container paths: absolute paths as seen inside the driver root ("/usr/bin/nvidia-smi").
struct DriverFiles {
  std::string library_dir;              // folder holding libcuda.so.<version>, e.g. /usr/lib/x86_64-linux-gnu
  std::vector<std::string> libraries;   // every *.so.<version> there, plus vdpau/*.so.<version>; sorted
  std::vector<std::string> binaries;    // nvidia-smi, nvidia-debugdump, nvidia-persistenced, MPS control/server
  std::vector<std::string> firmware;    // /lib/firmware/nvidia/<version>/gsp*.bin
  std::vector<std::string> ipc_sockets; // persistenced and fabric manager sockets, the MPS pipe folder
  std::vector<std::string> control_nodes;  // /dev/nvidiactl, /dev/nvidia-uvm, ... that exist under the dev root
  // Files left out, and why (a name that is not UTF-8 cannot be written into a JSON spec).
  std::vector<std::string> warnings;
  bool operator==(const DriverFiles&) const = default;
};

// Scans `driver_root` (where the host's driver root is visible to this process) for the files of
// `driver_version`, and `dev_root` for the control device nodes. Error::not_found when libcuda for
// that version is nowhere under the driver root: a spec without libraries would only fail later,
// inside every container. Never throws, whatever the folder holds (names that are not UTF-8 are
// skipped with a warning naming their bytes escaped).
Result<DriverFiles> find_driver_files(const std::string& driver_root, const std::string& dev_root,
                                      const std::string& driver_version);

}  // namespace kgpu
