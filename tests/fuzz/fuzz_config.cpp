// Fuzz target: the config loader (YAML and JSON text, NVIDIA's v1 schema plus kgpu's section), then
// what the daemon does with a config that loaded: describe it and plan the node's resources.
// Nothing a config file holds may crash the loader or make plan() fail (it is total).
// Input: the file's text, loaded leniently as the daemon does (strict only turns unknown keys into
// errors; the loader reads YAML and JSON alike, whatever the file's name).
#include <cstddef>
#include <cstdint>
#include <string>

#include "config/diagnostics.h"
#include "config/loader.h"
#include "fuzz/fleet_inventory.h"
#include "plan/plan.h"

namespace {
const kgpu::Inventory* inventory = nullptr;
}

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kgpu::fuzz::silence_logs();
  // MIG-enabled and whole GPUs, so every MIG strategy and sharing mode has something to plan.
  inventory = new kgpu::Inventory(kgpu::fuzz::discover_fleet("a100-mig-mixed"));
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  auto loaded = kgpu::parse_config_text(text, "fuzz.yaml", false);
  (void)kgpu::format_diagnostics(loaded.diagnostics);
  if (kgpu::has_errors(loaded.diagnostics)) return 0;
  (void)kgpu::describe_effective_config(loaded);
  (void)kgpu::plan(loaded.config, *inventory);
  return 0;
}
