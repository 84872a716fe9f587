#pragma once
// Loading the effective Config from the built-in defaults, the config file (YAML or JSON, NVIDIA's
// version v1 plus a `kgpu:` section), environment variables and command-line flags, with the
// precedence flag > env > file > default that NVIDIA's plugin has. Every problem is reported at
// once, located (file:line:column, env NAME, flag --name), with the valid choices.
//
// Typical use (kgpu plugin):
//   ConfigFlags flags;  add_config_flags(*cmd, flags);        // before parsing
//   auto loaded = load_config(flags, process_environment(), strict);
//   if (!loaded) { log loaded.error().message; exit 1; }      // message lists every error
//   log format_diagnostics(loaded->diagnostics);              // warnings
// Reloads call load_config again with the same flags and environment.
#include <map>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "config/config.h"
#include "config/diagnostics.h"
#include "core/result.h"

namespace kgpu {

struct LoadedConfig {
  Config config;
  std::vector<Diagnostic> diagnostics;  // warnings only when load_config succeeded
  // Setting key (e.g. "flags.migStrategy", "flags.plugin.deviceListStrategy", "kgpu.sysfsRoot",
  // "kubeletSocket", "sharing.timeSlicing") -> where its value came from:
  // "default" | "file" | "env NAME" | "flag --name".
  std::map<std::string, std::string> origins;
};

// Raw values given on the command line. Kept as text so that load_config validates them with the
// same messages as file and env values, and knows which flag spelling the operator used.
struct ConfigFlags {
  struct Value {
    std::string flag;   // as registered, e.g. "--mig-strategy"
    std::string value;  // list settings: comma-joined across repetitions
  };
  std::map<std::string, Value> values;  // setting key -> value

  // Records a value for a setting key (list settings append). Also useful in tests.
  void set(const std::string& key, const std::string& flag, const std::string& value);
};

// Registers every NVIDIA-compatible option (--mig-strategy, --fail-on-init-error,
// --pass-device-specs, --device-list-strategy, --device-id-strategy, --nvidia-driver-root /
// --driver-root, --nvidia-dev-root / --dev-root, --mps-root, --device-discovery-strategy,
// --gds-enabled, --mofed-enabled, --config-file, --kubelet-socket, --cdi-annotation-prefix,
// --nvidia-ctk-path / --nvidia-cdi-hook-path, --container-driver-root / --driver-root-ctr-path,
// --shared-devices-allocation-policy, ...) and kgpu's own (--sysfs-root, --proc-root,
// --cdi-spec-dir, --cdi-kind, --metrics-addr, --mig-allocation-policy, --backends, ...).
// Boolean flags accept `--flag`, `--flag=true` and `--flag=false`.
// No option reads the environment through CLI11: load_config does that, to know each origin.
// `command` picks the flags that matter to that subcommand (every setting still comes from the
// file and the environment everywhere); the help shows each flag's type and real default.
enum class FlagScope { Plugin, Devices, Labels, CdiGenerate, MpsDaemon };
void add_config_flags(CLI::App& command, ConfigFlags& flags, FlagScope scope);
// Whether the setting `key` is offered as a flag by `scope` (for tests and the help golden files).
bool flag_in_scope(const std::string& key, FlagScope scope);

// Builds the effective Config. The config file is --config-file, else $CONFIG_FILE, else none.
// strict: unknown keys are errors instead of warnings.
// On failure the Error message is format_diagnostics() of every diagnostic, warnings (did-you-mean
// hints) included, as `kgpu config validate` prints them.
Result<LoadedConfig> load_config(const ConfigFlags& flags,
                                 const std::map<std::string, std::string>& environment, bool strict);

// Validates one file the way `kgpu plugin` would load it with no env and no flags but `mps_root`
// (--mps-root; empty: none): `kgpu config validate`. Same checks, same severities as the daemon,
// so a file it passes starts the daemon. Returns every diagnostic (warnings and errors); the
// Config is meaningful only when there are no errors.
LoadedConfig validate_config_file(const std::string& path, bool strict, const std::string& mps_root = {});

// Like validate_config_file, for text already in memory; `name` is used in diagnostics.
LoadedConfig parse_config_text(const std::string& text, const std::string& name, bool strict,
                               const std::string& mps_root = {});

// The current process environment as a map (environ).
std::map<std::string, std::string> process_environment();

// `kgpu plugin --print-config`: every setting, its effective value and where it came from.
std::string describe_effective_config(const LoadedConfig& loaded);

// One line per compatibility-only setting (accepted so that NVIDIA configs and flags load unchanged,
// no effect in kgpu, such as flags.deviceDiscoveryStrategy) that is set, from
// any origin, to something other than its default: the key, the value, the origin, that it has no
// effect in kgpu and why. Empty when none is.
std::vector<std::string> describe_compatibility_only(const LoadedConfig& loaded);

}  // namespace kgpu
