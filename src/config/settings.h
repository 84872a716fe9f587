#pragma once
// The table of simple settings: one entry per key that a file, an env var or a flag can set.
// Every layer (file, env, flags) goes through the same table, so a value is validated with the
// same message wherever it came from, and every setting has exactly one spelling per layer.
// `resources`, `sharing` and `imex` have structure of their own and live in section parsers.
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "core/strings.h"

namespace kgpu::config_detail {

enum class SettingKind {
  String,     // any text
  Bool,       // true/false (also 1/0, yes/no, on/off, t/f)
  Enum,       // one of `choices`
  UInt,       // a non-negative integer
  List,       // one or more values (a YAML sequence or a single scalar; env/flags: comma list),
              // each one of `choices` when choices are given
  UIntList,   // list of non-negative integers (may be empty)
  ActionMap,  // map of non-negative integer -> one of `choices` ("79=ignore" in env/flags)
};

struct Setting {
  std::string key;    // file path, e.g. "flags.plugin.deviceListStrategy"; CLI-only: "kubeletSocket"
  bool in_file = true;
  SettingKind kind = SettingKind::String;
  std::string noun;   // for messages: "MIG strategy"
  std::vector<std::string> choices;
  std::vector<std::string> flags;  // "--mig-strategy", aliases after the first
  std::vector<std::string> envs;   // first one set wins
  std::string help;
  // Values are validated before apply: scalars have exactly one element; ActionMap elements are
  // "N=action".
  std::function<void(Config&, const std::vector<std::string>&)> apply;
  std::function<std::string(const Config&)> show;
};

const std::vector<Setting>& settings();
const Setting* find_setting(std::string_view key);

std::optional<bool> parse_bool(std::string_view text);
std::optional<uint64_t> parse_uint(std::string_view text);
std::vector<std::string> split_list(std::string_view text);  // comma-separated, trimmed, no empties
using kgpu::join;

// Checks textual values for `setting`; returns an error message naming the valid choices.
std::optional<std::string> check_values(const Setting& setting, const std::vector<std::string>& values);

}  // namespace kgpu::config_detail
