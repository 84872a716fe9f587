#include "config/go_duration.h"

#include <cctype>
#include <cstdlib>
#include <map>

namespace kgpu {

std::optional<std::chrono::nanoseconds> parse_go_duration(const std::string& text) {
  using std::chrono::nanoseconds;
  if (text == "infinite") return nanoseconds::max();
  if (text.empty()) return std::nullopt;
  if (text.find_first_not_of("0123456789") == std::string::npos)  // bare nanoseconds
    return nanoseconds(std::strtoll(text.c_str(), nullptr, 10));
  static const std::map<std::string, double> unit_ns = {{"ns", 1.0},   {"us", 1e3},  {"ms", 1e6},
                                                        {"s", 1e9},    {"m", 60e9},  {"h", 3600e9}};
  size_t i = text[0] == '+' ? 1 : 0;
  if (i == text.size()) return std::nullopt;
  double total = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (i == start) return std::nullopt;
    double number = std::strtod(text.substr(start, i - start).c_str(), nullptr);
    size_t unit_start = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    auto unit = unit_ns.find(text.substr(unit_start, i - unit_start));
    if (unit == unit_ns.end()) return std::nullopt;
    total += number * unit->second;
  }
  return nanoseconds(static_cast<long long>(total));
}

}  // namespace kgpu
