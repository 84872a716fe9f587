#pragma once
// Checks that need the merged config (file + env + flags): a setting from one layer can make a
// setting from another invalid (sharing.mps in the file, MPS_ROOT in the env).
#include <map>
#include <string>
#include <vector>

#include "config/config.h"
#include "config/diagnostics.h"
#include "config/parse_context.h"

namespace kgpu::config_detail {

struct CheckInput {
  const Config& config;
  const std::map<std::string, std::string>& origins;  // key -> "file" | "env X" | "flag --x" | "default"
  const std::map<std::string, Position>& positions;   // file positions of keys set in the file
  std::string file;
};

void check_effective_config(const CheckInput& input, std::vector<Diagnostic>& out);

// Go duration ("60s", "1m30s", "500ms", "1.5h"), a plain number of nanoseconds, or "infinite".
bool valid_go_duration(const std::string& text);

}  // namespace kgpu::config_detail
