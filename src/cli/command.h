#pragma once
// Subcommand registry: each src/cli/<name>.cpp defines a function that adds its CLI11 subcommand
// and registers it with KGPU_COMMAND(fn). The subcommand's callback stores its exit code with
// set_exit_code(); main() returns it.
#include <CLI/CLI.hpp>

namespace kgpu::cli {

using CommandSetup = void (*)(CLI::App& root);

int add_command(CommandSetup setup);
void set_exit_code(int code);

}  // namespace kgpu::cli

#define KGPU_CONCAT_INNER(a, b) a##b
#define KGPU_CONCAT(a, b) KGPU_CONCAT_INNER(a, b)
#define KGPU_COMMAND(fn) \
  static const int KGPU_CONCAT(kgpu_command_registered_, __LINE__) = ::kgpu::cli::add_command(fn)
