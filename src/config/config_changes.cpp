#include "config/config_changes.h"

#include <map>
#include <sstream>

namespace kgpu {
namespace {

// "flags.migStrategy = mixed (file)" -> {"flags.migStrategy", "mixed (file)"}.
std::pair<std::string, std::string> split_line(const std::string& line) {
  const auto eq = line.find(" = ");
  if (eq == std::string::npos) return {line, ""};
  return {line.substr(0, eq), line.substr(eq + 3)};
}

}  // namespace

std::vector<std::string> effective_config_lines(const LoadedConfig& loaded) {
  std::vector<std::string> out;
  std::istringstream in(describe_effective_config(loaded));
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line.ends_with("(default)")) continue;
    std::string compact;
    for (char c : line)
      if (c != ' ' || compact.empty() || compact.back() != ' ') compact += c;
    out.push_back(std::move(compact));
  }
  return out;
}

std::vector<std::string> config_line_changes(const std::vector<std::string>& before,
                                             const std::vector<std::string>& after) {
  std::map<std::string, std::string> old_values;
  for (const auto& line : before) old_values.insert(split_line(line));
  std::vector<std::string> out;
  for (const auto& line : after) {
    const auto [key, value] = split_line(line);
    const auto old = old_values.find(key);
    if (old == old_values.end()) {
      out.push_back(line + " (was: default)");
      continue;
    }
    if (old->second != value) out.push_back(line + " (was: " + old->second + ")");
    old_values.erase(old);
  }
  // What is left was set before and is at its default now, in `before`'s order.
  for (const auto& line : before) {
    const auto [key, value] = split_line(line);
    if (old_values.count(key)) out.push_back(key + " back to its default (was: " + value + ")");
  }
  return out;
}

}  // namespace kgpu
