#include "config/diagnostics.h"

#include <algorithm>
#include <numeric>

namespace kgpu {

std::string format_diagnostic(const Diagnostic& d) {
  std::string out = d.file;
  if (d.line > 0) {
    out += ":" + std::to_string(d.line);
    if (d.column > 0) out += ":" + std::to_string(d.column);
  }
  out += d.severity == Diagnostic::Severity::Error ? ": error: " : ": warning: ";
  out += d.message;
  return out;
}

std::string format_diagnostics(const std::vector<Diagnostic>& diagnostics) {
  std::string out;
  for (const auto& d : diagnostics) {
    out += format_diagnostic(d);
    out += '\n';
  }
  return out;
}

bool has_errors(const std::vector<Diagnostic>& diagnostics) {
  return std::any_of(diagnostics.begin(), diagnostics.end(),
                     [](const Diagnostic& d) { return d.severity == Diagnostic::Severity::Error; });
}

size_t edit_distance(const std::string& a, const std::string& b) {
  // Two-row dynamic programming; keys are short, so this is cheap.
  std::vector<size_t> previous(b.size() + 1), current(b.size() + 1);
  std::iota(previous.begin(), previous.end(), size_t{0});
  for (size_t i = 1; i <= a.size(); ++i) {
    current[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
      current[j] = std::min({previous[j] + 1, current[j - 1] + 1, substitution});
    }
    std::swap(previous, current);
  }
  return previous[b.size()];
}

std::string closest_match(const std::string& word, const std::vector<std::string>& candidates) {
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
    return s;
  };
  // A typo changes a few characters; allow about a third of the word, at least two.
  size_t limit = std::max<size_t>(2, word.size() / 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const auto& candidate : candidates) {
    // Case-only differences (mpsroot vs mpsRoot) are the most common mistake: count them as 1.
    size_t d = lower(word) == lower(candidate) ? 1 : edit_distance(word, candidate);
    if (d < best_distance) {
      best_distance = d;
      best = candidate;
    }
  }
  return best;
}

}  // namespace kgpu
