// Layering: defaults, then the file, then env vars, then flags (NVIDIA's precedence), then the
// checks that need the merged result. Every layer validates through the settings table.
#include "config/loader.h"

#include "config/checks.h"
#include "config/parse_context.h"
#include "config/settings.h"
#include "config/xid_policy.h"
#include "core/safe_file.h"

extern char** environ;  // NOLINT: POSIX

namespace kgpu {
namespace {

using config_detail::Setting;
using config_detail::SettingKind;

bool is_list(SettingKind kind) {
  return kind == SettingKind::List || kind == SettingKind::UIntList || kind == SettingKind::ActionMap;
}

std::vector<std::string> text_values(const Setting& s, const std::string& text) {
  if (is_list(s.kind)) return config_detail::split_list(text);
  return {text};
}

// Applies one textual value (env or flag) for `s`, or reports why it cannot.
void apply_text(const Setting& s, const std::string& text, const std::string& origin, Config& config,
                LoadedConfig& out) {
  auto values = text_values(s, text);
  if (auto problem = config_detail::check_values(s, values)) {
    out.diagnostics.push_back({Diagnostic::Severity::Error, origin, 0, 0, *problem});
    return;
  }
  s.apply(config, values);
  out.origins[s.key] = origin;
}

// DP_DISABLE_HEALTHCHECKS / DP_ENABLE_HEALTHCHECKS, with NVIDIA's meanings (config/xid_policy.h);
// an entry that is neither "all", "xids" nor an XID number is skipped with a warning and the rest
// applies, as NVIDIA's plugin does (it logs and keeps running).
void apply_health_env(const std::map<std::string, std::string>& env, Config& config, LoadedConfig& out) {
  auto disable = env.find("DP_DISABLE_HEALTHCHECKS");
  auto enable = env.find("DP_ENABLE_HEALTHCHECKS");
  std::optional<std::string> disable_value, enable_value;
  if (disable != env.end()) disable_value = disable->second;
  if (enable != env.end()) enable_value = enable->second;
  if (!disable_value && !enable_value) return;
  auto applied = kgpu::apply_health_env(config.health, disable_value, enable_value);
  for (const auto& w : applied.warnings) {
    std::string name = w.substr(0, w.find(':'));
    out.diagnostics.push_back({Diagnostic::Severity::Warning, "env " + name, 0, 0, w});
  }
  const std::string origin = disable_value ? "env DP_DISABLE_HEALTHCHECKS" : "env DP_ENABLE_HEALTHCHECKS";
  if (applied.config.enabled != config.health.enabled) out.origins["kgpu.health.enabled"] = origin;
  if (applied.config.xids_enabled != config.health.xids_enabled) out.origins["kgpu.health.xidsEnabled"] = origin;
  if (applied.config.ignored_xids != config.health.ignored_xids) out.origins["kgpu.health.ignoredXids"] = origin;
  config.health = std::move(applied.config);
}

// The first env var of `s` that is set. Empty values count as set only for free-text settings
// (MPS_ROOT="" is a meaningful value; MIG_STRATEGY="" is an unset Helm value).
const std::string* env_value(const Setting& s, const std::map<std::string, std::string>& env,
                             std::string* name) {
  for (const auto& candidate : s.envs) {
    auto it = env.find(candidate);
    if (it == env.end()) continue;
    if (it->second.empty() && s.kind != SettingKind::String) continue;
    *name = candidate;
    return &it->second;
  }
  return nullptr;
}

// The config file through the bounded read (core/safe_file.h): a directory, FIFO, device or a file
// over kConfigFileLimit is an error, never an empty config or a hang.
Result<std::string> read_file(const std::string& path) {
  auto text = read_regular_file(path, kConfigFileLimit);
  if (!text) return Error{text.error().code, "cannot read config file: " + text.error().message};
  return text;
}

void default_origins(LoadedConfig& out) {
  for (const auto& s : config_detail::settings()) out.origins[s.key] = "default";
  for (const char* key : {"resources.gpus", "resources.mig", "sharing.timeSlicing", "sharing.mps",
                          "kgpu.deviceGroups"})
    out.origins[key] = "default";
}

struct FileParse {
  std::vector<Diagnostic> diagnostics;
  std::map<std::string, config_detail::Position> positions;
};

FileParse parse_into(const std::string& text, const std::string& name, bool strict, LoadedConfig& out) {
  config_detail::ParseContext ctx(name, strict);
  config_detail::parse_document(text, ctx, out.config);
  for (const auto& [key, origin] : ctx.origins()) out.origins[key] = origin;
  return {std::move(ctx.diagnostics()), std::move(ctx.positions())};
}

}  // namespace

void ConfigFlags::set(const std::string& key, const std::string& flag, const std::string& value) {
  auto [it, inserted] = values.try_emplace(key, Value{flag, value});
  if (inserted) return;
  const Setting* s = config_detail::find_setting(key);
  if (s && is_list(s->kind)) it->second.value += "," + value;  // repeated list flags accumulate
  else it->second = Value{flag, value};                        // repeated scalars: last one wins
}

Result<LoadedConfig> load_config(const ConfigFlags& flags, const std::map<std::string, std::string>& env,
                                 bool strict) {
  LoadedConfig out;
  default_origins(out);
  std::map<std::string, config_detail::Position> positions;

  // Which file: --config-file, else CONFIG_FILE.
  std::string path, path_origin = "default";
  if (auto it = flags.values.find("configFile"); it != flags.values.end()) {
    path = it->second.value;
    path_origin = "flag " + it->second.flag;
  } else {
    std::string name;
    if (const std::string* v = env_value(*config_detail::find_setting("configFile"), env, &name)) {
      path = *v;
      path_origin = "env " + name;
    }
  }

  if (!path.empty()) {
    auto text = read_file(path);
    if (!text) {
      out.diagnostics.push_back({Diagnostic::Severity::Error, path, 0, 0, text.error().message});
    } else {
      FileParse parsed = parse_into(*text, path, strict, out);
      out.diagnostics.insert(out.diagnostics.end(), parsed.diagnostics.begin(), parsed.diagnostics.end());
      positions = std::move(parsed.positions);
    }
  }

  for (const auto& s : config_detail::settings()) {
    std::string name;
    if (const std::string* v = env_value(s, env, &name)) apply_text(s, *v, "env " + name, out.config, out);
  }
  apply_health_env(env, out.config, out);

  for (const auto& [key, given] : flags.values) {
    const Setting* s = config_detail::find_setting(key);
    if (!s) {
      out.diagnostics.push_back({Diagnostic::Severity::Error, "flag " + given.flag, 0, 0,
                                 "internal: no setting named \"" + key + "\""});
      continue;
    }
    apply_text(*s, given.value, "flag " + given.flag, out.config, out);
  }

  out.config.config_file = path;
  out.origins["configFile"] = path_origin;

  config_detail::check_effective_config({out.config, out.origins, positions, path}, out.diagnostics);

  if (has_errors(out.diagnostics)) {
    // Warnings too, as `config validate` prints them: a did-you-mean for a misspelled key is often
    // what explains the error (a failed reload or start must not hide it).
    std::string message = format_diagnostics(out.diagnostics);
    if (!message.empty() && message.back() == '\n') message.pop_back();
    return Error::invalid(message);
  }
  return out;
}

LoadedConfig parse_config_text(const std::string& text, const std::string& name, bool strict,
                               const std::string& mps_root) {
  LoadedConfig out;
  default_origins(out);
  FileParse parsed = parse_into(text, name, strict, out);
  out.diagnostics = std::move(parsed.diagnostics);
  out.config.config_file = name;
  if (!mps_root.empty()) {
    out.config.mps_root = mps_root;
    out.origins["flags.mpsRoot"] = "flag --mps-root";
  }
  config_detail::check_effective_config({out.config, out.origins, parsed.positions, name}, out.diagnostics);
  return out;
}

LoadedConfig validate_config_file(const std::string& path, bool strict, const std::string& mps_root) {
  auto text = read_file(path);
  if (!text) {
    LoadedConfig out;
    default_origins(out);
    out.diagnostics.push_back({Diagnostic::Severity::Error, path, 0, 0, text.error().message});
    return out;
  }
  return parse_config_text(*text, path, strict, mps_root);
}

std::map<std::string, std::string> process_environment() {
  std::map<std::string, std::string> env;
  for (char** entry = environ; entry && *entry; ++entry) {
    std::string_view text(*entry);
    auto eq = text.find('=');
    if (eq == std::string_view::npos) continue;
    env.emplace(std::string(text.substr(0, eq)), std::string(text.substr(eq + 1)));
  }
  return env;
}

}  // namespace kgpu
