#include "config/parse_context.h"

#include <set>

#include "config/settings.h"
#include "sysfs/device_groups_yaml.h"

namespace kgpu::config_detail {

Position ParseContext::position(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  if (mark.is_null() || mark.line < 0) return {};
  return {mark.line + 1, mark.column + 1};
}

const char* ParseContext::type_name(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Null: return "nothing";
    case YAML::NodeType::Scalar: return "a scalar";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Map: return "a mapping";
    case YAML::NodeType::Undefined: return "nothing";
  }
  return "something else";
}

void ParseContext::add(Diagnostic::Severity severity, Position at, std::string message) {
  diagnostics_.push_back({severity, file_, at.line, at.column, std::move(message)});
}

void ParseContext::error(const YAML::Node& at, std::string message) {
  add(Diagnostic::Severity::Error, position(at), std::move(message));
}
void ParseContext::warning(const YAML::Node& at, std::string message) {
  add(Diagnostic::Severity::Warning, position(at), std::move(message));
}
void ParseContext::error_at(Position at, std::string message) {
  add(Diagnostic::Severity::Error, at, std::move(message));
}

void ParseContext::unknown_key(const YAML::Node& key, const std::string& where,
                               const std::vector<std::string>& known) {
  std::string name = key.Scalar();
  std::string message = "unknown key \"" + name + "\"" + (where.empty() ? "" : " in " + where);
  std::string suggestion = closest_match(name, known);
  if (!suggestion.empty()) message += "; did you mean \"" + suggestion + "\"?";
  else if (!known.empty()) message += " (valid: " + join(known, ", ") + ")";
  add(strict_ ? Diagnostic::Severity::Error : Diagnostic::Severity::Warning, position(key), message);
}

namespace {
// What a misplaced value is, with the value itself for a scalar: `the string "four"`, `the number 3`,
// `the boolean true` (the text cut at 40 bytes, anything but printable ASCII shown as '?').
std::string describe_value(const YAML::Node& node) {
  if (!node.IsScalar()) return ParseContext::type_name(node);
  const std::string& text = node.Scalar();
  std::string shown;
  for (size_t i = 0; i < text.size() && i < 40; ++i) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    shown += (c >= 0x20 && c < 0x7f && c != '"' && c != '\\') ? static_cast<char>(c) : '?';
  }
  if (text.size() > 40) shown += "...";
  const bool quoted = node.Tag() == "!";  // "3" in quotes is a string whatever it spells
  if (!quoted && !text.empty() && text.find_first_not_of("+-0123456789.eE") == std::string::npos &&
      text.find_first_of("0123456789") != std::string::npos)
    return "the number " + shown;
  if (!quoted && parse_bool(text)) return "the boolean " + shown;
  return "the string \"" + shown + "\"";
}
}  // namespace

void ParseContext::wrong_type(const YAML::Node& at, const std::string& key, const std::string& expected) {
  error(at, "expected " + expected + " for " + key + ", got " + describe_value(at));
}

std::optional<std::string> ParseContext::key(const YAML::Node& key, const std::string& where) {
  if (key.IsScalar()) return key.Scalar();
  error(key, std::string("a key") + (where.empty() ? "" : " in " + where) + " must be text, got " + type_name(key));
  return std::nullopt;
}

namespace {

// Children of `prefix` in the settings table: "flags" -> {migStrategy, ..., plugin, gfd}.
std::vector<std::string> children_of(const std::string& prefix) {
  std::vector<std::string> out;
  std::set<std::string> seen;
  for (const auto& s : settings()) {
    if (!s.in_file || s.key.size() <= prefix.size() + 1 || !s.key.starts_with(prefix + ".")) continue;
    std::string rest = s.key.substr(prefix.size() + 1);
    std::string child = rest.substr(0, rest.find('.'));
    if (seen.insert(child).second) out.push_back(child);
  }
  return out;
}

const char* expected_for(SettingKind kind) {
  switch (kind) {
    case SettingKind::Bool: return "a boolean (true or false)";
    case SettingKind::UInt: return "a non-negative integer";
    case SettingKind::List: return "a string or a list of strings";
    case SettingKind::UIntList: return "a list of integers";
    case SettingKind::ActionMap: return "a mapping of XID to action";
    case SettingKind::String:
    case SettingKind::Enum: break;
  }
  return "a string";
}

// YAML value -> textual values, or nullopt (after reporting) when the shape is wrong.
std::optional<std::vector<std::string>> leaf_values(const Setting& s, const YAML::Node& value,
                                                    ParseContext& ctx) {
  std::vector<std::string> out;
  switch (s.kind) {
    case SettingKind::String:
    case SettingKind::Bool:
    case SettingKind::Enum:
    case SettingKind::UInt:
      if (!value.IsScalar()) break;
      return std::vector<std::string>{value.Scalar()};
    case SettingKind::List:
    case SettingKind::UIntList:
      if (value.IsScalar() && s.kind == SettingKind::List) return std::vector<std::string>{value.Scalar()};
      if (!value.IsSequence()) break;
      for (const auto& item : value) {
        if (!item.IsScalar()) {
          ctx.wrong_type(item, s.key + " entries", "a scalar");
          return std::nullopt;
        }
        out.push_back(item.Scalar());
      }
      return out;
    case SettingKind::ActionMap:
      if (!value.IsMap()) break;
      for (const auto& entry : value) {
        const auto xid = ctx.key(entry.first, s.key);
        if (!xid) return std::nullopt;
        if (!entry.second.IsScalar()) {
          ctx.wrong_type(entry.second, s.key + "." + *xid, "an action");
          return std::nullopt;
        }
        out.push_back(*xid + "=" + entry.second.Scalar());
      }
      return out;
  }
  ctx.wrong_type(value, s.key, expected_for(s.kind));
  return std::nullopt;
}

// List entries are checked one by one so each bad entry is reported at its own position.
bool report_bad_items(const Setting& s, const YAML::Node& value, ParseContext& ctx) {
  bool ok = true;
  if (value.IsSequence()) {
    for (const auto& item : value)
      if (auto problem = check_values(s, {item.Scalar()})) {
        ctx.error(item, *problem);
        ok = false;
      }
  } else if (value.IsMap()) {
    for (const auto& entry : value)
      if (auto problem = check_values(s, {entry.first.Scalar() + "=" + entry.second.Scalar()})) {
        ctx.error(entry.first, *problem);
        ok = false;
      }
  }
  return ok;
}

}  // namespace

void parse_settings_section(const YAML::Node& node, const std::string& prefix, ParseContext& ctx,
                            Config& config) {
  if (node.IsNull()) return;
  if (!node.IsMap()) {
    ctx.wrong_type(node, prefix, "a mapping");
    return;
  }
  std::vector<std::string> known = children_of(prefix);
  if (prefix == "kgpu") known.push_back("deviceGroups");  // structured; parsed by sysfs/ (its owner)
  std::set<std::string> seen;
  for (const auto& entry : node) {
    const auto name_text = ctx.key(entry.first, prefix);
    if (!name_text) continue;
    const std::string& name = *name_text;
    const std::string key = prefix + "." + name;
    if (!seen.insert(name).second) {
      ctx.error(entry.first, "duplicate key \"" + name + "\" in " + prefix);
      continue;
    }
    if (key == "kgpu.deviceGroups") {
      auto groups = parse_device_groups(entry.second);
      if (!groups) {
        ctx.error(entry.second, "kgpu.deviceGroups: " + groups.error().message);
        continue;
      }
      config.device_groups = std::move(*groups);
      ctx.remember(key, entry.second);
      ctx.set_origin(key);
    } else if (const Setting* s = find_setting(key); s && s->in_file) {
      if (entry.second.IsNull()) continue;  // `key:` with no value leaves the default, as NVIDIA does
      auto values = leaf_values(*s, entry.second, ctx);
      if (!values) continue;
      if (!report_bad_items(*s, entry.second, ctx)) continue;
      if (auto problem = check_values(*s, *values)) {
        ctx.error(entry.second, *problem);
        continue;
      }
      s->apply(config, *values);
      ctx.remember(key, entry.second);
      ctx.set_origin(key);
    } else if (std::find(known.begin(), known.end(), name) != known.end()) {
      parse_settings_section(entry.second, key, ctx, config);
    } else {
      ctx.unknown_key(entry.first, prefix, known);
    }
  }
}

void parse_document(const std::string& text, ParseContext& ctx, Config& config) {
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    ctx.error_at({e.mark.line + 1, e.mark.column + 1}, "invalid YAML: " + e.msg);
    return;
  }
  if (root.IsNull()) return;  // an empty file is the default config
  if (!root.IsMap()) {
    ctx.wrong_type(root, "the config file", "a mapping");
    return;
  }
  const std::vector<std::string> sections = {"version", "flags", "resources", "sharing", "imex", "kgpu"};
  std::set<std::string> seen;
  for (const auto& entry : root) {
    const auto name_text = ctx.key(entry.first, "the config file");
    if (!name_text) continue;
    const std::string& name = *name_text;
    if (!seen.insert(name).second) {
      ctx.error(entry.first, "duplicate key \"" + name + "\"");
      continue;
    }
    const YAML::Node& value = entry.second;
    if (name == "version") {
      if (!value.IsNull() && !value.IsScalar()) ctx.wrong_type(value, "version", "a string");
      else if (!value.IsNull() && !value.Scalar().empty() && value.Scalar() != "v1")
        ctx.error(value, "unknown version \"" + value.Scalar() + "\" (valid: v1)");
    } else if (name == "flags" || name == "kgpu") {
      parse_settings_section(value, name, ctx, config);
    } else if (name == "resources") {
      parse_resources_section(value, ctx, config);
    } else if (name == "sharing") {
      parse_sharing_section(value, ctx, config);
    } else if (name == "imex") {
      parse_settings_section(value, name, ctx, config);
    } else {
      ctx.unknown_key(entry.first, "", sections);
    }
  }
}

}  // namespace kgpu::config_detail
