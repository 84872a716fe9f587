// kgpu: one executable, many subcommands (see DESIGN.md). Subcommands register themselves.
#include <vector>

#include "cli/command.h"
#include "core/logging.h"

namespace kgpu::cli {
namespace {
std::vector<CommandSetup>& registry() {
  static std::vector<CommandSetup> commands;
  return commands;
}
int g_exit_code = 0;
}  // namespace

int add_command(CommandSetup setup) {
  registry().push_back(setup);
  return static_cast<int>(registry().size());
}
void set_exit_code(int code) { g_exit_code = code; }

}  // namespace kgpu::cli

int main(int argc, char** argv) {
  CLI::App app{"kgpu: a GPU device plugin and feature labeller for Kubernetes", "kgpu"};
  app.set_version_flag("--version", std::string("kgpu ") + KGPU_VERSION);
  app.require_subcommand(1);
  app.fallthrough();  // global options may follow the subcommand: `kgpu plugin --log-format json`
  kgpu::LogOptions log_options;
  app.add_option("--log-level", log_options.level, "trace|debug|info|warn|error")
      ->envname("KGPU_LOG_LEVEL")
      ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error", "off"}));
  app.add_option("--log-format", log_options.format, "text|json")
      ->envname("KGPU_LOG_FORMAT")
      ->check(CLI::IsMember({"text", "json"}));
  app.parse_complete_callback([&] { kgpu::configure_logging(log_options); });
  for (auto setup : kgpu::cli::registry()) setup(app);
  CLI11_PARSE(app, argc, argv);
  return kgpu::cli::g_exit_code;
}
