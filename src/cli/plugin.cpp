// `kgpu plugin`: the node daemon. Loads the config (NVIDIA-compatible flags, env and file), then
// hands over to server::Daemon until SIGTERM/SIGINT.
#include <iostream>
#include <memory>
#include <sstream>

#include <spdlog/spdlog.h>

#include "cli/command.h"
#include "config/loader.h"
#include "server/daemon.h"
#include "server/node_discovery.h"

namespace {

struct PluginArgs {
  kgpu::ConfigFlags flags;
  bool print_config = false;
  bool strict = false;
};

void log_lines(spdlog::level::level_enum level, const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) spdlog::log(level, "{}", line);
}

int run_plugin(const PluginArgs& args) {
  auto env = kgpu::process_environment();
  auto loaded = kgpu::load_config(args.flags, env, args.strict);
  if (!loaded) {
    spdlog::error("invalid configuration:");
    log_lines(spdlog::level::err, loaded.error().message);
    return 1;
  }
  log_lines(spdlog::level::warn, kgpu::format_diagnostics(loaded->diagnostics));
  if (args.print_config) {
    std::cout << kgpu::describe_effective_config(*loaded);
    return 0;
  }
  // Before any thread exists, so that only the daemon's signalfd receives the signals.
  kgpu::server::Daemon::block_signals();
  auto discovery = std::make_shared<kgpu::server::NodeDiscovery>();
  kgpu::server::DaemonOptions options;
  options.config = loaded->config;
  options.discover = [discovery](const kgpu::Config& c) { return discovery->discover(c); };
  options.reload_config = [flags = args.flags, strict = args.strict]() -> kgpu::Result<kgpu::Config> {
    auto reloaded = kgpu::load_config(flags, kgpu::process_environment(), strict);
    if (!reloaded) return reloaded.error();
    log_lines(spdlog::level::warn, kgpu::format_diagnostics(reloaded->diagnostics));
    return reloaded->config;
  };
  spdlog::info("kgpu {} starting; device-plugin directory {}", KGPU_VERSION,
               kgpu::server::plugin_dir_of(options.config.kubelet_socket));
  kgpu::server::Daemon daemon(std::move(options));
  return daemon.run();
}

void setup_plugin(CLI::App& root) {
  auto args = std::make_shared<PluginArgs>();
  auto* cmd = root.add_subcommand("plugin", "Run the device plugin daemon (serves the kubelet)");
  kgpu::add_config_flags(*cmd, args->flags);
  cmd->add_flag("--print-config", args->print_config, "Print every effective setting and its origin, then exit");
  cmd->add_flag("--strict-config", args->strict, "Treat unknown config keys as errors");
  cmd->callback([args] { kgpu::cli::set_exit_code(run_plugin(*args)); });
}
KGPU_COMMAND(setup_plugin);

}  // namespace
