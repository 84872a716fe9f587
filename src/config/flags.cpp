// Command-line options for every setting in the table. Values are kept as text in ConfigFlags and
// validated by load_config, so a bad flag gets the same message as a bad env or file value.
#include "config/loader.h"
#include "config/settings.h"

namespace kgpu {

void add_config_flags(CLI::App& command, ConfigFlags& flags) {
  using config_detail::SettingKind;
  for (const auto& s : config_detail::settings()) {
    if (s.flags.empty()) continue;
    std::string names = config_detail::join(s.flags, ",");
    std::string help = s.help;
    if (!s.choices.empty()) help += " (" + config_detail::join(s.choices, "|") + ")";
    if (!s.envs.empty()) help += " [env " + config_detail::join(s.envs, ", ") + "]";
    const std::string key = s.key;
    const std::string primary = s.flags.front();
    if (s.kind == SettingKind::Bool) {
      // `--flag`, `--flag=false`: an option with an optional value that defaults to "true".
      command
          .add_option_function<std::string>(
              names, [&flags, key, primary](const std::string& v) { flags.set(key, primary, v); }, help)
          ->expected(0, 1)
          ->default_str("true");
    } else if (s.kind == SettingKind::List || s.kind == SettingKind::UIntList ||
               s.kind == SettingKind::ActionMap) {
      command
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
      command.add_option_function<std::string>(
          names, [&flags, key, primary](const std::string& v) { flags.set(key, primary, v); }, help);
    }
  }
}

}  // namespace kgpu
