#include "fuzz/fleet_inventory.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <vector>

#include <spdlog/spdlog.h>

#include "config/diagnostics.h"
#include "config/loader.h"
#include "fixture_writer.h"
#include "nvml/discovery.h"
#include "nvml/nvml_library.h"

namespace kgpu::fuzz {

namespace fs = std::filesystem;

[[noreturn]] static void give_up(const std::string& what) {
  std::fprintf(stderr, "fuzz setup failed: %s\n", what.c_str());
  std::abort();
}

Inventory discover_fleet(const std::string& fleet_name) {
  const std::string fleet = std::string(KGPU_FIXTURES_DIR) + "/fleets/" + fleet_name + ".yaml";
  std::string pattern = (fs::temp_directory_path() / "kgpu-fuzz-fleet-XXXXXX").string();
  if (!::mkdtemp(pattern.data())) give_up("mkdtemp");
  const fs::path tree = pattern;
  if (auto st = fake_nvml::write_fixture(fleet, tree.string()); !st) give_up(st.error().message);
  ::setenv("KGPU_FAKE_NVML_FLEET", fleet.c_str(), 1);
  ::unsetenv("KGPU_FAKE_NVML_CONTROL");
  auto nvml = NvmlLibrary::load_file(std::string(KGPU_FAKE_NVML_DIR) + "/libnvidia-ml.so.1");
  if (!nvml) give_up(nvml.error().message);
  // Never unloaded: libFuzzer keeps reading the coverage counters of every instrumented library.
  static std::vector<std::shared_ptr<NvmlLibrary>> keep_loaded;
  keep_loaded.push_back(*nvml);
  NvidiaDiscoveryOptions options;
  options.sysfs_root = (tree / "sys").string();
  options.proc_root = (tree / "proc").string();
  options.dev_root = tree.string();
  auto inventory = discover_nvidia(**nvml, options);
  std::error_code ec;
  fs::remove_all(tree, ec);
  if (!inventory) give_up(inventory.error().message);
  return *inventory;
}

Config config_from_yaml(const std::string& text) {
  auto loaded = parse_config_text(text, "fuzz-target-config.yaml", true);
  if (has_errors(loaded.diagnostics)) give_up(format_diagnostics(loaded.diagnostics));
  return loaded.config;
}

void silence_logs() { spdlog::set_level(spdlog::level::off); }

}  // namespace kgpu::fuzz
