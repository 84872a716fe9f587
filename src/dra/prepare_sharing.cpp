// NVIDIA's resource.nvidia.com/v1beta1 device configs, decoded strictly (NVIDIA's driver uses a
// strict decoder, so a claim kgpu accepts is one NVIDIA's driver accepts too).
#include "dra/prepare_sharing.h"

#include <algorithm>
#include <array>
#include <limits>
#include <set>

#include "dra/claim.h"

namespace kgpu::dra {

namespace {

using nlohmann::json;
__extension__ typedef unsigned __int128 u128;  // GCC/Clang; __extension__ keeps -Wpedantic quiet

// Every member of `object` (at `path`) must be one of `known`.
std::optional<Error> only_known(const json& object, const std::string& path, std::set<std::string_view> known) {
  for (auto it = object.begin(); it != object.end(); ++it)
    if (!known.count(it.key())) return Error::invalid(path + ": unknown field " + quote_text(it.key()));
  return std::nullopt;
}

Result<const json*> object_member(const json& object, const char* key, const std::string& path) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return static_cast<const json*>(nullptr);
  if (!it->is_object()) return Error::invalid(path + "." + key + " must be an object, not " + it->type_name());
  return &*it;
}

Result<std::string> string_member(const json& object, const char* key, const std::string& path) {
  auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) return Error::invalid(path + "." + key + " must be a string, not " + it->type_name());
  return it->get<std::string>();
}

// A pinned memory limit as NVIDIA's decoder reads a resource.Quantity field: a JSON string (its
// surrounding spaces trimmed, as Quantity.UnmarshalJSON does) or a JSON number, taken by its text.
// NVIDIA then gives MPS Value()/2^20 whole MiB and refuses a limit where that is 0 ("value set too
// low"): under 1 MiB, zero and negative limits alike.
Result<uint64_t> mps_limit_member(const json& value, const std::string& path) {
  std::string text;
  if (value.is_string()) {
    text = value.get<std::string>();
    const size_t first = text.find_first_not_of(" \t\n\r\v\f");
    text = first == std::string::npos ? std::string() : text.substr(first, text.find_last_not_of(" \t\n\r\v\f") - first + 1);
  } else if (value.is_number_unsigned()) {
    text = std::to_string(value.get<uint64_t>());
  } else if (value.is_number_integer()) {
    text = std::to_string(value.get<int64_t>());
  } else if (value.is_number_float()) {
    text = value.dump();  // shortest round-trip text: 1e9 -> "1000000000.0", 1e30 -> "1e+30"
  } else {
    return Error::invalid(path + " must be a quantity such as \"10Gi\", not " + value.type_name());
  }
  auto bytes = parse_quantity_bytes(text);
  if (!bytes) return Error::invalid(path + ": " + bytes.error().message);
  if (*bytes < (uint64_t{1} << 20))
    return Error::invalid(path + " is " + quote_text(text) + " (" + std::to_string(*bytes) +
                          " bytes): under the 1Mi an MPS limit needs, as MPS takes whole MiB (rounded down)");
  return bytes;
}

Result<MpsConfig> parse_mps(const json& j, const std::string& path) {
  if (auto e = only_known(j, path,
                          {"defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit",
                           "defaultPerDevicePinnedMemoryLimit"}))
    return *e;
  MpsConfig out;
  if (auto it = j.find("defaultActiveThreadPercentage"); it != j.end() && !it->is_null()) {
    // NVIDIA's Validate: 0..100, 0 included (its daemon then gets "set_default_active_thread_percentage 0").
    if (!it->is_number_integer() || it->get<int64_t>() < 0 || it->get<int64_t>() > 100)
      return Error::invalid(path + ".defaultActiveThreadPercentage must be a whole number from 0 to 100, not " +
                            quote_text(it->dump()));
    out.active_thread_percentage = static_cast<int>(it->get<int64_t>());
  }
  if (auto it = j.find("defaultPinnedDeviceMemoryLimit"); it != j.end() && !it->is_null()) {
    auto bytes = mps_limit_member(*it, path + ".defaultPinnedDeviceMemoryLimit");
    if (!bytes) return bytes.error();
    out.pinned_memory_bytes = *bytes;
  }
  auto per_device = object_member(j, "defaultPerDevicePinnedMemoryLimit", path);
  if (!per_device) return per_device.error();
  if (*per_device)
    for (auto it = (*per_device)->begin(); it != (*per_device)->end(); ++it) {
      auto bytes = mps_limit_member(it.value(), path + ".defaultPerDevicePinnedMemoryLimit[" + quote_text(it.key()) + "]");
      if (!bytes) return bytes.error();
      out.per_device_pinned[it.key()] = *bytes;
    }
  return out;
}

// A timeSlicingConfig that is there must name its interval: NVIDIA's Validate dereferences the
// missing one (a nil pointer) and "" is not one of its intervals.
Result<TimeSliceInterval> parse_interval(const json& j, const std::string& path) {
  if (auto e = only_known(j, path, {"interval"})) return *e;
  if (auto it = j.find("interval"); it == j.end() || it->is_null())
    return Error::invalid(path + ".interval is missing: give Default, Short, Medium or Long, or leave out " + path +
                          " for Default");
  auto name = string_member(j, "interval", path);
  if (!name) return name.error();
  for (auto i : {TimeSliceInterval::Default, TimeSliceInterval::Short, TimeSliceInterval::Medium,
                 TimeSliceInterval::Long})
    if (*name == to_string(i)) return i;
  return Error::invalid(path + ".interval must be Default, Short, Medium or Long, not " + quote_text(*name));
}

Result<DeviceSharing> parse_sharing(const json& j, const std::string& path, DeviceConfig::Kind kind) {
  const bool mig = kind == DeviceConfig::Kind::Mig;
  if (auto e = mig ? only_known(j, path, {"strategy", "mpsConfig"})
                   : only_known(j, path, {"strategy", "timeSlicingConfig", "mpsConfig"}))
    return *e;
  auto strategy = string_member(j, "strategy", path);
  if (!strategy) return strategy.error();
  auto time_slicing = object_member(j, "timeSlicingConfig", path);
  if (!time_slicing) return time_slicing.error();
  auto mps = object_member(j, "mpsConfig", path);
  if (!mps) return mps.error();

  DeviceSharing out;
  if (*strategy == "TimeSlicing") {
    // No timeSlicingConfig: NVIDIA's Normalize gives it interval Default, which is applied (the
    // GPU's time slice is set to Default, not left as it is).
    out.strategy = DeviceSharing::Strategy::TimeSlicing;
    if (*mps) return Error::invalid(path + ".mpsConfig is set, but the strategy is TimeSlicing");
    if (*time_slicing) {
      auto interval = parse_interval(**time_slicing, path + ".timeSlicingConfig");
      if (!interval) return interval.error();
      out.interval = *interval;
    }
  } else if (*strategy == "MPS") {
    out.strategy = DeviceSharing::Strategy::Mps;
    if (*time_slicing) return Error::invalid(path + ".timeSlicingConfig is set, but the strategy is MPS");
    if (*mps) {
      auto limits = parse_mps(**mps, path + ".mpsConfig");
      if (!limits) return limits.error();
      out.mps = std::move(*limits);
    }
  } else {
    return Error::invalid(path + ".strategy must be TimeSlicing or MPS, not " + quote_text(*strategy));
  }
  return out;
}

}  // namespace

const char* to_string(TimeSliceInterval interval) {
  switch (interval) {
    case TimeSliceInterval::Default: return "Default";
    case TimeSliceInterval::Short: return "Short";
    case TimeSliceInterval::Medium: return "Medium";
    case TimeSliceInterval::Long: return "Long";
  }
  return "Default";
}

Result<DeviceConfig> parse_device_config(const json& parameters) {
  const std::string path = "opaque parameters";
  if (!parameters.is_object())
    return Error::invalid(path + " must be an object, not " + std::string(parameters.type_name()));
  auto api_version = string_member(parameters, "apiVersion", path);
  if (!api_version) return api_version.error();
  if (*api_version != kNvidiaConfigApiVersion)
    return Error::invalid(path + ".apiVersion must be " + std::string(kNvidiaConfigApiVersion) + ", not " +
                          quote_text(*api_version));
  auto kind = string_member(parameters, "kind", path);
  if (!kind) return kind.error();
  DeviceConfig out;
  if (*kind == "GpuConfig") out.kind = DeviceConfig::Kind::Gpu;
  else if (*kind == "MigDeviceConfig") out.kind = DeviceConfig::Kind::Mig;
  else return Error::invalid(path + ".kind " + quote_text(*kind) + " is not served by kgpu (GpuConfig, MigDeviceConfig)");
  if (auto e = only_known(parameters, path, {"apiVersion", "kind", "sharing"})) return *e;
  auto sharing = object_member(parameters, "sharing", path);
  if (!sharing) return sharing.error();
  if (*sharing) {
    auto s = parse_sharing(**sharing, path + ".sharing", out.kind);
    if (!s) return s.error();
    out.sharing = std::move(*s);
  }
  return out;
}

Result<std::map<std::string, uint64_t>> mps_pinned_limits(const MpsConfig& mps, std::vector<std::string> device_uuids) {
  std::sort(device_uuids.begin(), device_uuids.end());  // bytewise, as Go's slices.Sort
  device_uuids.erase(std::unique(device_uuids.begin(), device_uuids.end()), device_uuids.end());
  std::map<std::string, uint64_t> out;
  if (mps.pinned_memory_bytes)
    for (const auto& uuid : device_uuids) out[uuid] = *mps.pinned_memory_bytes;
  const std::string field = "defaultPerDevicePinnedMemoryLimit key ";
  const std::string range = device_uuids.empty() ? std::string("it applies to no device")
                                                 : "0.." + std::to_string(device_uuids.size() - 1);
  std::map<std::string, std::string> named_by;  // UUID -> the key that named it
  for (const auto& [key, bytes] : mps.per_device_pinned) {
    std::string uuid;
    if (std::binary_search(device_uuids.begin(), device_uuids.end(), key)) {
      uuid = key;
    } else {
      // strconv.Atoi: an optional sign and decimal digits, within int64.
      std::string_view digits = key;
      const bool negative = !digits.empty() && digits.front() == '-';
      if (!digits.empty() && (digits.front() == '-' || digits.front() == '+')) digits.remove_prefix(1);
      const bool integer = !digits.empty() && digits.find_first_not_of("0123456789") == std::string_view::npos;
      if (!integer)
        return Error::invalid(field + quote_text(key) +
                              " is neither the UUID of a device this config applies to nor an index into them (" +
                              range + ", in UUID order)");
      const size_t significant = std::min(digits.find_first_not_of('0'), digits.size());
      digits.remove_prefix(significant);
      if (digits.size() > 19 || (digits.size() == 19 && digits > "9223372036854775807"))
        return Error::invalid(field + quote_text(key) + " is out of range for an index");
      if ((negative && !digits.empty()) || digits.size() > 9 ||
          (!digits.empty() && std::stoull(std::string(digits)) >= device_uuids.size()))
        return Error::invalid(field + quote_text(key) + " is not an index into the " +
                              std::to_string(device_uuids.size()) + " device(s) this config applies to (" + range +
                              ", in UUID order)");
      uuid = device_uuids[digits.empty() ? 0 : std::stoull(std::string(digits))];
    }
    auto [seen, fresh] = named_by.emplace(uuid, key);
    if (!fresh && out.at(uuid) != bytes)
      return Error::invalid(field + quote_text(key) + " and key " + quote_text(seen->second) + " both name " + uuid +
                            ", with different limits");
    out[uuid] = bytes;
  }
  return out;
}

namespace {

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
  const std::string shown = quote_text(text);
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
               quote_text(text.substr(i)) + " is left over");
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
      return bad("has an unknown suffix " + quote_text(suffix) + " (an exponent is e or E and a whole number: 1e9)");
    e.remove_prefix(std::min(e.find_first_not_of('0'), e.size()));
    if (e.size() > 10 || (e.size() == 10 && e > (minus ? "2147483648" : "2147483647")))
      return bad("has an exponent out of range");
    exponent = e.empty() ? 0 : std::stoll(std::string(e));
    if (minus) exponent = -exponent;
  } else {
    return bad("has an unknown suffix " + quote_text(suffix) +
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

}  // namespace kgpu::dra
