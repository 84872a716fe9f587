#pragma once
// Shared state of one config-file parse: where diagnostics go, and where each key was found so that
// later checks (after env and flags are merged) can still point at the right line.
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <yaml-cpp/yaml.h>

#include "config/config.h"
#include "config/diagnostics.h"

namespace kgpu::config_detail {

struct Position {
  int line = 0;    // 1-based
  int column = 0;  // 1-based
};

class ParseContext {
 public:
  ParseContext(std::string file, bool strict) : file_(std::move(file)), strict_(strict) {}

  void error(const YAML::Node& at, std::string message);
  void warning(const YAML::Node& at, std::string message);
  void error_at(Position at, std::string message);
  // Unknown keys: a warning (error when strict), with a did-you-mean among `known`.
  void unknown_key(const YAML::Node& key, const std::string& where, const std::vector<std::string>& known);
  // "expected a string for flags.mpsRoot, got a list"
  void wrong_type(const YAML::Node& at, const std::string& key, const std::string& expected);
  // A mapping key as text, or nullopt after reporting an error at it: YAML allows lists and maps
  // as keys (`{[a]: 1}`), and no key of ours is one. Every loop over a mapping goes through here.
  std::optional<std::string> key(const YAML::Node& key, const std::string& where);

  void remember(const std::string& key, const YAML::Node& at) { positions_[key] = position(at); }
  void set_origin(const std::string& key) { origins_[key] = "file"; }

  static Position position(const YAML::Node& node);
  static const char* type_name(const YAML::Node& node);

  const std::string& file() const { return file_; }
  std::vector<Diagnostic>& diagnostics() { return diagnostics_; }
  std::map<std::string, Position>& positions() { return positions_; }
  std::map<std::string, std::string>& origins() { return origins_; }

 private:
  void add(Diagnostic::Severity severity, Position at, std::string message);

  std::string file_;
  bool strict_;
  std::vector<Diagnostic> diagnostics_;
  std::map<std::string, Position> positions_;
  std::map<std::string, std::string> origins_;
};

// Each top-level section; they fill `config` and report into `ctx`.
void parse_settings_section(const YAML::Node& node, const std::string& prefix, ParseContext& ctx,
                            Config& config);
void parse_resources_section(const YAML::Node& node, ParseContext& ctx, Config& config);
void parse_sharing_section(const YAML::Node& node, ParseContext& ctx, Config& config);

// The whole document (text already read).
void parse_document(const std::string& text, ParseContext& ctx, Config& config);

}  // namespace kgpu::config_detail
