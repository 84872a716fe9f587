// `kgpu version`: the version and the commit it was built from (--version prints the same).
#include <iostream>

#include "cli/command.h"
#include "kgpu_commit.h"

namespace {
void setup_version(CLI::App& root) {
  auto* cmd = root.add_subcommand("version", "Print the kgpu version and the commit it was built from");
  cmd->callback([] { std::cout << "kgpu " << KGPU_VERSION << " (commit " << KGPU_COMMIT << ")\n"; });
}
KGPU_COMMAND(setup_version);
}  // namespace
