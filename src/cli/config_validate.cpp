// `kgpu config validate FILE [--strict] [--mps-root PATH]`: every problem in a config file at once,
// located by line and column, and the warnings `kgpu plugin` logs for the file at start (keys it
// accepts without effect); exit status 1 when there is any error (warnings alone exit 0). An error
// here is exactly what makes `kgpu plugin` refuse the file.
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "config/loader.h"

namespace {

struct ValidateOptions {
  std::string file;
  bool strict = false;
  std::string mps_root;
};

void setup_config(CLI::App& root) {
  auto* config = root.add_subcommand("config", "Work with kgpu / NVIDIA device plugin config files");
  config->require_subcommand(1);
  auto options = std::make_shared<ValidateOptions>();
  auto* validate = config->add_subcommand("validate", "Check a config file and report every problem");
  validate->add_option("file", options->file, "config file (YAML or JSON)")->required();
  validate->add_flag("--strict", options->strict, "treat unknown keys as errors");
  validate->add_option("--mps-root", options->mps_root,
                       "the MPS root the daemon gets from its environment or flags (the chart sets MPS_ROOT): "
                       "sharing.mps without one is an error, as for kgpu plugin");
  validate->callback([options] {
    const kgpu::LoadedConfig loaded = kgpu::validate_config_file(options->file, options->strict, options->mps_root);
    std::cout << kgpu::format_diagnostics(loaded.diagnostics);
    // What the daemon warns about at start for this file (a key kgpu accepts but ignores): not
    // "ok" silently when `kgpu plugin` would say it.
    for (const auto& note : kgpu::describe_compatibility_only(loaded))
      std::cout << options->file << ": warning: " << note << "\n";
    const bool failed = kgpu::has_errors(loaded.diagnostics);
    if (!failed) std::cout << options->file << ": ok\n";
    kgpu::cli::set_exit_code(failed ? 1 : 0);
  });
}

KGPU_COMMAND(setup_config);

}  // namespace
