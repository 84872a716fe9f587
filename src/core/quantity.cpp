#include "core/quantity.h"

#include <algorithm>
#include <array>
#include <limits>
#include <string>

namespace kgpu {

namespace {

__extension__ typedef unsigned __int128 u128;  // GCC/Clang; __extension__ keeps -Wpedantic quiet

// `text` quoted for an error message, cut to a readable length (quantities are outside input).
std::string quoted(std::string_view text) {
  constexpr size_t kLimit = 80;  // as dra::quote_text
  if (text.size() <= kLimit) return "\"" + std::string(text) + "\"";
  return "\"" + std::string(text.substr(0, kLimit)) + "...\" (" + std::to_string(text.size()) + " bytes)";
}

// Multiplies a decimal number (most significant digit first) by 2^bits, in place.
void times_power_of_two(std::string& digits, int bits) {
  for (; bits > 0; bits -= 10) {
    const unsigned factor = 1u << std::min(bits, 10);
    unsigned carry = 0;
    for (auto it = digits.rbegin(); it != digits.rend(); ++it) {
      const unsigned v = static_cast<unsigned>(*it - '0') * factor + carry;
      *it = static_cast<char>('0' + v % 10);
      carry = v / 10;
    }
    for (; carry > 0; carry /= 10) digits.insert(digits.begin(), static_cast<char>('0' + carry % 10));
  }
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

Result<uint64_t> parse_quantity_bytes(std::string_view text) {
  const std::string shown = quoted(text);
  auto bad = [&](const std::string& why) { return Error::invalid("quantity " + shown + " " + why); };
  if (text.empty()) return Error::invalid("quantity is empty");
  size_t i = 0;
  const bool negative = text[0] == '-';
  if (text[0] == '-' || text[0] == '+') ++i;
  // The number's significant digits (leading zeros dropped), and how many were after the point.
  std::string digits;
  int64_t fraction_digits = 0;
  size_t seen = 0;
  auto take = [&](bool fraction) {
    for (; i < text.size() && is_digit(text[i]); ++i, ++seen) {
      if (fraction) ++fraction_digits;
      if (!digits.empty() || text[i] != '0') digits.push_back(text[i]);
    }
  };
  take(false);
  if (i < text.size() && text[i] == '.') {
    ++i;
    take(true);
  }
  if (seen == 0) return bad("has no digits");
  // Kubernetes' suffix: letters of "eEinumkKMGTP", then an optional sign and digits, then the end.
  const size_t suffix_at = i;
  while (i < text.size() && std::string_view("eEinumkKMGTP").find(text[i]) != std::string_view::npos) ++i;
  if (i < text.size() && (text[i] == '+' || text[i] == '-')) ++i;
  while (i < text.size() && is_digit(text[i])) ++i;
  if (i != text.size())
    return bad("is not a number with an optional suffix (such as 10Gi, 500M, 1e9 or 0.5Gi): " +
               quoted(text.substr(i)) + " is left over");
  const std::string_view suffix = text.substr(suffix_at);
  int64_t exponent = 0;  // value = number * 10^exponent * 2^bits
  int bits = 0;
  struct Unit {
    std::string_view name;
    int exponent, bits;
  };
  static constexpr std::array<Unit, 16> kUnits{{{"", 0, 0},    {"n", -9, 0},   {"u", -6, 0},   {"m", -3, 0},
                                                {"k", 3, 0},   {"M", 6, 0},    {"G", 9, 0},    {"T", 12, 0},
                                                {"P", 15, 0},  {"E", 18, 0},   {"Ki", 0, 10},  {"Mi", 0, 20},
                                                {"Gi", 0, 30}, {"Ti", 0, 40},  {"Pi", 0, 50},  {"Ei", 0, 60}}};
  auto unit = std::find_if(kUnits.begin(), kUnits.end(), [&](const Unit& u) { return u.name == suffix; });
  if (unit != kUnits.end()) {
    exponent = unit->exponent;
    bits = unit->bits;
  } else if (suffix.size() > 1 && (suffix[0] == 'e' || suffix[0] == 'E')) {
    std::string_view e = suffix.substr(1);
    const bool minus = e.front() == '-';
    if (e.front() == '-' || e.front() == '+') e.remove_prefix(1);
    if (e.empty() || e.find_first_not_of("0123456789") != std::string_view::npos)
      return bad("has an unknown suffix " + quoted(suffix) + " (an exponent is e or E and a whole number: 1e9)");
    e.remove_prefix(std::min(e.find_first_not_of('0'), e.size()));
    if (e.size() > 10 || (e.size() == 10 && e > (minus ? "2147483648" : "2147483647")))
      return bad("has an exponent out of range");
    exponent = e.empty() ? 0 : std::stoll(std::string(e));
    if (minus) exponent = -exponent;
  } else {
    return bad("has an unknown suffix " + quoted(suffix) +
               " (Ki Mi Gi Ti Pi Ei; n u m k M G T P E; or e/E and an exponent)");
  }
  if (digits.empty()) return uint64_t{0};  // zero, whatever its sign and unit
  if (negative) return bad("is negative");
  times_power_of_two(digits, bits);
  exponent -= fraction_digits;
  // Whole digits of the value: with more than 19 it is at least 10^19, over 2^63.
  const int64_t whole_digits = static_cast<int64_t>(digits.size()) + exponent;
  const std::string too_large = "is larger than " + std::to_string(std::numeric_limits<int64_t>::max()) + " bytes (2^63-1)";
  if (whole_digits > 19) return bad(too_large);
  u128 bytes = 0;
  if (exponent >= 0) {
    for (char c : digits) bytes = bytes * 10 + static_cast<unsigned>(c - '0');
    for (int64_t k = 0; k < exponent; ++k) bytes *= 10;
  } else {
    const size_t whole = whole_digits > 0 ? static_cast<size_t>(whole_digits) : 0;
    for (size_t k = 0; k < whole; ++k) bytes = bytes * 10 + static_cast<unsigned>(digits[k] - '0');
    // A fraction of a byte rounds up, as Quantity.Value() does.
    if (digits.find_first_not_of('0', whole) != std::string::npos) bytes += 1;
  }
  if (bytes > static_cast<u128>(std::numeric_limits<int64_t>::max())) return bad(too_large);
  return static_cast<uint64_t>(bytes);
}

}  // namespace kgpu
