#include "cdi/cdi.h"

#include <filesystem>
#include <system_error>

#include "cdi/driver_files.h"
#include "cdi/spec_builder.h"
#include "cdi/spec_writer.h"
#include "plan/imex.h"

namespace kgpu {

std::string cdi_scan_root(const Config& config) {
  std::error_code ec;
  if (!config.container_driver_root.empty() && std::filesystem::is_directory(config.container_driver_root, ec))
    return config.container_driver_root;
  return config.nvidia_driver_root;
}

Result<DriverFiles> scan_driver_files(const Config& config, const Inventory& inventory) {
  const std::string root = cdi_scan_root(config);
  // The dev root as seen from here: inside the driver root mount when the dev root is the driver
  // root (the usual case), else the host path itself.
  const bool dev_in_driver_root = config.nvidia_dev_root.empty() || config.nvidia_dev_root == config.nvidia_driver_root;
  return find_driver_files(root, dev_in_driver_root ? root : config.dev_root(), inventory.driver_version);
}

Result<WrittenCdiSpec> generate_cdi_spec(const Config& config, const Inventory& inventory) {
  // The IMEX channels Allocate names (plan/imex.h) need their own spec, as NVIDIA's plugin writes;
  // it needs no driver files, so it is written even when the GPUs' spec cannot be.
  if (!config.imex_channel_ids.empty()) {
    auto imex = write_cdi_spec(config.cdi_spec_dir, imex_cdi_kind(config), build_imex_cdi_spec(config));
    if (!imex) return imex.error();
  }
  auto files = scan_driver_files(config, inventory);
  if (!files) return files.error();
  auto path = write_cdi_spec(config.cdi_spec_dir, config.cdi_kind, build_cdi_spec(config, inventory, *files));
  if (!path) return path.error();

  return WrittenCdiSpec{std::move(*path), std::move(files->warnings)};
}

}  // namespace kgpu
