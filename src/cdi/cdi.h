#pragma once
// CDI for the daemon and `kgpu cdi generate`: scan the driver root, build the spec, write it.
#include <string>
#include <vector>

#include "cdi/driver_files.h"
#include "config/config.h"
#include "core/inventory.h"
#include "core/result.h"

namespace kgpu {

// Where the host's driver root is visible to this process: containerDriverRoot when it exists (the
// daemon in its pod), else nvidiaDriverRoot (running on the host).
std::string cdi_scan_root(const Config& config);

// find_driver_files for the node's driver version under cdi_scan_root, with the dev root as seen
// from here. Shared by the device-plugin spec and the DRA claim specs, so a GPU reaches a
// container with the same driver files through either API.
Result<DriverFiles> scan_driver_files(const Config& config, const Inventory& inventory);

struct WrittenCdiSpec {
  std::string path;
  std::vector<std::string> warnings;  // driver files left out of the spec (DriverFiles::warnings)
};

// find_driver_files + build_cdi_spec + write_cdi_spec into config.cdi_spec_dir.
Result<WrittenCdiSpec> generate_cdi_spec(const Config& config, const Inventory& inventory);

}  // namespace kgpu
