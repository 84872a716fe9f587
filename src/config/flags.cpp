// Command-line options for every setting in the table. Values are kept as text in ConfigFlags and
// validated by load_config, so a bad flag gets the same message as a bad env or file value.
// Each subcommand offers only the flags that change what it does (FlagScope); the help shows each
// flag's type and its real default (not CLI11's implicit "true" of an optional-value boolean).
#include <map>

#include "config/loader.h"
#include "config/settings.h"

namespace kgpu {
namespace {

using config_detail::SettingKind;

enum : unsigned {
  kPlugin = 1u << static_cast<int>(FlagScope::Plugin),
  kDevices = 1u << static_cast<int>(FlagScope::Devices),
  kLabels = 1u << static_cast<int>(FlagScope::Labels),
  kCdi = 1u << static_cast<int>(FlagScope::CdiGenerate),
  kMps = 1u << static_cast<int>(FlagScope::MpsDaemon),
  kAll = kPlugin | kDevices | kLabels | kCdi | kMps,
};

// Which subcommands a setting's flag matters to. Not listed: every subcommand (discovery and
// config-file settings: what is found and planned).
unsigned scopes_of(const std::string& key) {
  static const std::map<std::string, unsigned> table = {
      {"flags.mpsRoot", kPlugin | kDevices | kLabels | kMps},
      {"flags.gdsEnabled", kPlugin},
      {"flags.mofedEnabled", kPlugin},
      {"flags.gdrcopyEnabled", kPlugin},
      {"flags.useNodeFeatureAPI", kPlugin | kLabels},
      {"flags.plugin.passDeviceSpecs", kPlugin},
      {"flags.plugin.deviceListStrategy", kPlugin},
      {"flags.plugin.deviceIDStrategy", kPlugin | kCdi},
      {"flags.plugin.cdiAnnotationPrefix", kPlugin},
      {"flags.plugin.nvidiaCTKPath", kPlugin | kCdi},
      {"flags.plugin.sharedDevicesAllocationPolicy", kPlugin | kDevices},
      {"flags.gfd.oneshot", kLabels},
      {"flags.gfd.noTimestamp", kPlugin | kLabels},
      {"flags.gfd.sleepInterval", kLabels},
      {"flags.gfd.outputFile", kPlugin | kLabels},
      {"flags.gfd.machineTypeFile", kPlugin | kLabels},
      {"imex.channelIDs", kPlugin | kDevices | kCdi},
      {"imex.required", kPlugin | kDevices | kCdi},
      {"kubeletSocket", kPlugin | kDevices | kMps},
      {"kgpu.cdiSpecDir", kPlugin | kCdi},
      {"kgpu.cdiKind", kPlugin | kCdi},
      {"kgpu.metricsAddr", kPlugin | kDevices},  // devices --live reads the causes from /metrics
      {"kgpu.gpuTelemetry", kPlugin},
      {"kgpu.migAllocationPolicy", kPlugin | kDevices},
      {"kgpu.labels.enabled", kPlugin},
      {"kgpu.labels.keepOnExit", kPlugin | kLabels},
      {"kgpu.dra.enabled", kPlugin | kDevices | kMps},
      {"kgpu.dra.devicePlugin", kPlugin | kDevices | kMps},
      {"kgpu.dra.gpus", kPlugin | kDevices | kMps},
      {"kgpu.dra.vendors", kPlugin | kDevices | kMps},
      {"kgpu.dra.driver", kPlugin | kDevices | kMps},
      {"kgpu.dra.amdDriver", kPlugin | kDevices | kMps},
      {"kgpu.dra.intelDriver", kPlugin | kDevices | kMps},
      {"kgpu.dra.nvidiaSmiPath", kPlugin},
      {"kgpu.dra.noExecuteXids", kPlugin | kDevices},
      {"kgpu.dra.deviceMetadata", kPlugin},
      {"kgpu.dra.mig.dynamic", kPlugin | kDevices},
      {"kgpu.dra.sharing.memory.gpus", kPlugin | kDevices},
      {"kgpu.dra.sharing.memory.requestPolicy.default", kPlugin | kDevices},
      {"kgpu.dra.sharing.memory.requestPolicy.min", kPlugin | kDevices},
      {"kgpu.dra.sharing.memory.requestPolicy.step", kPlugin | kDevices},
      {"kgpu.dra.sharing.memory.multiprocessorsDefault", kPlugin | kDevices},
      {"kgpu.dra.sharing.memory.activeThreadPercentage", kPlugin | kDevices},
      {"kgpu.dra.sharing.memory.oneNamespacePerGpu", kPlugin},
  };
  auto it = table.find(key);
  return it == table.end() ? kAll : it->second;
}

// "BOOL", "TEXT", ... and the default, e.g. `[=BOOL] (default false)`: what the option takes.
std::string option_text(const config_detail::Setting& s) {
  static const Config defaults;
  std::string value = s.show(defaults);
  if (value == "\"\"" || value == "[]" || value == "{}") value = "none";
  std::string type;
  switch (s.kind) {
    case SettingKind::Bool: type = "[=BOOL]"; break;
    case SettingKind::Enum: type = "CHOICE"; break;
    case SettingKind::String: type = "TEXT"; break;
    case SettingKind::UInt: type = "UINT"; break;
    case SettingKind::List: type = "LIST"; break;
    case SettingKind::UIntList: type = "UINT,..."; break;
    case SettingKind::ActionMap: type = "XID=ACTION,..."; break;
  }
  return type + " (default " + value + ")";
}

}  // namespace

bool flag_in_scope(const std::string& key, FlagScope scope) {
  return (scopes_of(key) & (1u << static_cast<int>(scope))) != 0;
}

void add_config_flags(CLI::App& command, ConfigFlags& flags, FlagScope scope) {
  for (const auto& s : config_detail::settings()) {
    if (s.flags.empty() || !flag_in_scope(s.key, scope)) continue;
    std::string names = config_detail::join(s.flags, ",");
    std::string help = s.help;
    if (!s.choices.empty()) help += " (" + config_detail::join(s.choices, "|") + ")";
    if (!s.envs.empty()) help += " [env " + config_detail::join(s.envs, ", ") + "]";
    const std::string key = s.key;
    const std::string primary = s.flags.front();
    CLI::Option* option = nullptr;
    if (s.kind == SettingKind::Bool) {
      // `--flag`, `--flag=false`: an option with an optional value that defaults to "true".
      option = command
                   .add_option_function<std::string>(
                       names, [&flags, key, primary](const std::string& v) { flags.set(key, primary, v); }, help)
                   ->expected(0, 1)
                   ->default_str("true");
    } else if (s.kind == SettingKind::List || s.kind == SettingKind::UIntList ||
               s.kind == SettingKind::ActionMap) {
      option = command
                   .add_option_function<std::vector<std::string>>(
                       names,
                       [&flags, key, primary](const std::vector<std::string>& vs) {
                         for (const auto& v : vs) flags.set(key, primary, v);
                       },
                       help)
                   ->expected(1)
                   ->allow_extra_args(false)
                   ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    } else {
      option = command.add_option_function<std::string>(
          names, [&flags, key, primary](const std::string& v) { flags.set(key, primary, v); }, help);
    }
    option->option_text(option_text(s));
  }
}

}  // namespace kgpu
