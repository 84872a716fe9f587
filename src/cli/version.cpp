// `kgpu version`: prints the version (also available as --version).
#include <iostream>

#include "cli/command.h"

namespace {
void setup_version(CLI::App& root) {
  auto* cmd = root.add_subcommand("version", "Print the kgpu version");
  cmd->callback([] { std::cout << "kgpu " << KGPU_VERSION << "\n"; });
}
KGPU_COMMAND(setup_version);
}  // namespace
