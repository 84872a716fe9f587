// Writes the files a GPU node has next to NVML (sysfs PCI attributes, MIG capability minors,
// /dev nodes as plain files) for a fleet, under one root, so consumers can point their
// sysfs/proc/dev roots at it. Layout: FLEET_FORMAT.md, "Fixture tree".
#pragma once
#include <string>

#include "cap_files.h"
#include "core/result.h"
#include "fleet.h"

namespace kgpu::fake_nvml {

Status write_fixture(const Fleet& fleet, const std::string& out_dir);

// Loads the fleet file, then writes the tree.
Status write_fixture(const std::string& fleet_path, const std::string& out_dir);

}  // namespace kgpu::fake_nvml
