// `kgpu cdi generate`: discovers the node's NVIDIA devices and writes their CDI spec into the CDI
// spec folder (--cdi-spec-dir, default /var/run/cdi), or prints it with --stdout.
#include <iostream>
#include <memory>

#include "cdi/cdi.h"
#include "cdi/driver_files.h"
#include "cdi/spec_builder.h"
#include "cdi/spec_writer.h"
#include "cli/command.h"
#include "cli/node_config_selector.h"
#include "config/loader.h"
#include "server/node_discovery.h"

namespace {

struct CdiArgs {
  kgpu::ConfigFlags flags;
  bool to_stdout = false;
};

int run_cdi_generate(const CdiArgs& args) {
  auto loaded = kgpu::cli::load_config_as_daemon(args.flags, false);
  if (!loaded) {
    std::cerr << "invalid configuration:\n" << loaded.error().message << "\n";
    return 1;
  }
  std::cerr << kgpu::format_diagnostics(loaded->diagnostics);
  const kgpu::Config& config = loaded->config;
  kgpu::server::NodeDiscovery discovery;
  auto inventory = discovery.discover(config);
  if (!inventory) {
    std::cerr << "device discovery failed: " << inventory.error().message << "\n";
    return 1;
  }
  if (args.to_stdout) {
    const std::string root = kgpu::cdi_scan_root(config);
    auto files = kgpu::find_driver_files(root, root, inventory->driver_version);
    if (!files) {
      std::cerr << "cannot generate CDI spec: " << files.error().message << "\n";
      return 1;
    }
    for (const auto& w : files->warnings) std::cerr << "warning: " << w << "\n";
    std::cout << kgpu::cdi_spec_text(kgpu::build_cdi_spec(config, *inventory, *files));
    return 0;
  }
  auto written = kgpu::generate_cdi_spec(config, *inventory);
  if (!written) {
    std::cerr << "cannot generate CDI spec: " << written.error().message << "\n";
    return 1;
  }
  for (const auto& w : written->warnings) std::cerr << "warning: " << w << "\n";
  std::cout << "wrote " << written->path << "\n";
  return 0;
}

void setup_cdi(CLI::App& root) {
  auto* cdi = root.add_subcommand("cdi", "Container Device Interface specs");
  cdi->require_subcommand(1);
  auto args = std::make_shared<CdiArgs>();
  auto* generate = cdi->add_subcommand("generate", "Write a CDI spec for this node's NVIDIA GPUs and MIG devices");
  kgpu::add_config_flags(*generate, args->flags, kgpu::FlagScope::CdiGenerate);
  generate->add_flag("--stdout", args->to_stdout, "print the spec instead of writing it");
  generate->callback([args] { kgpu::cli::set_exit_code(run_cdi_generate(*args)); });
}

KGPU_COMMAND(setup_cdi);

}  // namespace
