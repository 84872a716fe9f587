#include "dra/model/dynamic_mig_name.h"

#include <charconv>

namespace kgpu::dra {
namespace {

// A decimal number of at most 6 digits (minors, profile ids and starts are small; no overflow).
bool number(std::string_view s, unsigned& out) {
  if (s.empty() || s.size() > 6) return false;
  auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  return ec == std::errc() && ptr == s.data() + s.size();
}

bool profile_text(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s)
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  return s.front() != '-' && s.back() != '-';
}

}  // namespace

Result<DynamicMigName> parse_dynamic_mig_name(std::string_view name) {
  auto bad = [&](const char* why) {
    return Error::invalid("\"" + std::string(name.substr(0, 80)) + "\" is not a dynamic MIG device name (" + why + ")");
  };
  // A device name is a DNS label: at most 63 characters.
  if (name.size() > 63) return bad("longer than 63 characters");
  if (!name.starts_with("gpu-")) return bad("no gpu- prefix");
  std::string_view rest = name.substr(4);
  const auto mig = rest.find("-mig-");
  if (mig == std::string_view::npos) return bad("no -mig-");
  DynamicMigName out;
  if (!number(rest.substr(0, mig), out.parent_minor)) return bad("parent minor is not a number");
  rest = rest.substr(mig + 5);
  // The profile may hold hyphens ("1g10gb-me"); the id and start are the last two fields, as in
  // NVIDIA's greedy pattern ^gpu-(\d+)-mig-(.+)-(\d+)-(\d+)$.
  const auto last = rest.rfind('-');
  if (last == std::string_view::npos) return bad("no placement start");
  const auto second = rest.rfind('-', last == 0 ? 0 : last - 1);
  if (second == std::string_view::npos || second == 0) return bad("no profile id");
  if (!number(rest.substr(last + 1), out.placement_start)) return bad("placement start is not a number");
  if (!number(rest.substr(second + 1, last - second - 1), out.profile_id)) return bad("profile id is not a number");
  const std::string_view profile = rest.substr(0, second);
  if (!profile_text(profile)) return bad("profile is not lower-case letters, digits and inner hyphens");
  out.profile = std::string(profile);
  return out;
}

}  // namespace kgpu::dra
