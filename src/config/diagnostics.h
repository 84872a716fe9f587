#pragma once
// A problem found while loading configuration, located precisely enough for an operator to fix it:
// "config.yaml:12:7: error: unknown MIG strategy "foo" (valid: none, single, mixed)".
#include <string>
#include <vector>

namespace kgpu {

struct Diagnostic {
  enum class Severity { Warning, Error };
  Severity severity = Severity::Error;
  std::string file;  // a path, or "env NAME" / "flag --name" for values that did not come from a file
  int line = 0;      // 1-based; 0 when there is no position (env, flags)
  int column = 0;    // 1-based; 0 when there is no position
  std::string message;
  bool operator==(const Diagnostic&) const = default;
};

// One line per diagnostic: "FILE:LINE:COL: error: MESSAGE" (LINE:COL left out when unknown).
std::string format_diagnostic(const Diagnostic& d);
std::string format_diagnostics(const std::vector<Diagnostic>& diagnostics);

bool has_errors(const std::vector<Diagnostic>& diagnostics);

// Levenshtein distance, for did-you-mean suggestions.
size_t edit_distance(const std::string& a, const std::string& b);
// The candidate closest to `word`, or "" when none is close enough to be a plausible typo.
std::string closest_match(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace kgpu
