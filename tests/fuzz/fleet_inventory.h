#pragma once
// Fuzz target support: the Inventory of one shipped fleet (tests/fixtures/fleets/<name>.yaml),
// discovered through the fake NVML exactly as the daemon discovers a node (fixture tree written
// to a temporary folder, the fake libnvidia-ml.so.1 loaded in this process). Called once, from
// LLVMFuzzerInitialize; aborts when the fleet cannot be discovered (a broken build, not a finding).
#include <string>

#include "config/config.h"
#include "core/inventory.h"

namespace kgpu::fuzz {

Inventory discover_fleet(const std::string& fleet_name);

// A Config parsed from YAML text; aborts on an error (the texts are the targets' own constants).
Config config_from_yaml(const std::string& text);

// Quiet logging: the code under test logs every rejected input.
void silence_logs();

}  // namespace kgpu::fuzz
