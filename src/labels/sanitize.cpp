#include "labels/sanitize.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>

namespace kgpu::labels {
namespace {

bool alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9'); }
bool value_char(char c) { return alnum(c) || c == '-' || c == '_' || c == '.'; }

uint32_t fnv1a(std::string_view s) {
  uint32_t h = 2166136261u;
  for (unsigned char c : s) {
    h ^= c;
    h *= 16777619u;
  }
  return h;
}

std::string trim_to_alnum(std::string s) {
  size_t b = 0, e = s.size();
  while (b < e && !alnum(s[b])) ++b;
  while (e > b && !alnum(s[e - 1])) --e;
  return s.substr(b, e - b);
}

constexpr size_t kMaxValue = 63;

}  // namespace

std::string gfd_sanitise(std::string_view raw) {
  std::string out;
  bool pending_space = false;
  for (char c : raw) {
    if (c == ' ') {
      pending_space = true;
      continue;
    }
    if (!value_char(c)) continue;
    if (pending_space && !out.empty()) out += '-';
    pending_space = false;
    out += c;
  }
  return out;
}

std::string k8s_label_value(std::string_view raw, size_t max_size) {
  std::string s = trim_to_alnum(gfd_sanitise(raw));
  if (s.size() <= max_size) return s;
  char suffix[10];
  std::snprintf(suffix, sizeof suffix, "-%08x", fnv1a(s));
  if (max_size < 10) return std::string(suffix + 1, std::min<size_t>(8, max_size));
  return trim_to_alnum(s.substr(0, max_size - 9)) + suffix;
}

bool is_valid_label_value(std::string_view v) {
  if (v.empty()) return true;
  if (v.size() > kMaxValue || !alnum(v.front()) || !alnum(v.back())) return false;
  for (char c : v)
    if (!value_char(c)) return false;
  return true;
}

bool is_valid_label_key(std::string_view key) {
  const auto slash = key.rfind('/');
  std::string_view name = key;
  if (slash != std::string_view::npos) {
    const auto prefix = key.substr(0, slash);
    name = key.substr(slash + 1);
    if (prefix.empty() || prefix.size() > 253) return false;
    // DNS subdomain: dot-separated lower-case alphanumeric labels, '-' inside.
    size_t start = 0;
    while (start <= prefix.size()) {
      auto dot = prefix.find('.', start);
      if (dot == std::string_view::npos) dot = prefix.size();
      const auto part = prefix.substr(start, dot - start);
      if (part.empty() || part.size() > 63) return false;
      for (char c : part)
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
      if (part.front() == '-' || part.back() == '-') return false;
      start = dot + 1;
    }
  }
  return !name.empty() && is_valid_label_value(name);
}

}  // namespace kgpu::labels
