// NVIDIA's resource.nvidia.com/v1beta1 device configs, decoded strictly (NVIDIA's driver uses a
// strict decoder, so a claim kgpu accepts is one NVIDIA's driver accepts too).
#include "dra/prepare_sharing.h"

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

Result<uint64_t> quantity_member(const json& value, const std::string& path) {
  // A plain JSON number of bytes: nlohmann keeps non-negative literals as signed or unsigned.
  if (value.is_number_unsigned() || (value.is_number_integer() && value.get<int64_t>() > 0)) {
    if (value.get<uint64_t>() == 0) return Error::invalid(path + " must be more than 0");
    return value.get<uint64_t>();
  }
  if (value.is_number()) return Error::invalid(path + " must be a positive whole number of bytes or a quantity");
  if (!value.is_string()) return Error::invalid(path + " must be a quantity such as \"10Gi\", not " + value.type_name());
  auto bytes = parse_quantity_bytes(value.get<std::string>());
  if (!bytes) return Error::invalid(path + ": " + bytes.error().message);
  if (*bytes == 0) return Error::invalid(path + " must be more than 0");
  return bytes;
}

Result<MpsConfig> parse_mps(const json& j, const std::string& path) {
  if (auto e = only_known(j, path,
                          {"defaultActiveThreadPercentage", "defaultPinnedDeviceMemoryLimit",
                           "defaultPerDevicePinnedMemoryLimit"}))
    return *e;
  MpsConfig out;
  if (auto it = j.find("defaultActiveThreadPercentage"); it != j.end() && !it->is_null()) {
    if (!it->is_number_integer() || it->get<int64_t>() < 1 || it->get<int64_t>() > 100)
      return Error::invalid(path + ".defaultActiveThreadPercentage must be a whole number from 1 to 100, not " +
                            quote_text(it->dump()));
    out.active_thread_percentage = static_cast<int>(it->get<int64_t>());
  }
  if (auto it = j.find("defaultPinnedDeviceMemoryLimit"); it != j.end() && !it->is_null()) {
    auto bytes = quantity_member(*it, path + ".defaultPinnedDeviceMemoryLimit");
    if (!bytes) return bytes.error();
    out.pinned_memory_bytes = *bytes;
  }
  auto per_device = object_member(j, "defaultPerDevicePinnedMemoryLimit", path);
  if (!per_device) return per_device.error();
  if (*per_device)
    for (auto it = (*per_device)->begin(); it != (*per_device)->end(); ++it) {
      auto bytes = quantity_member(it.value(), path + ".defaultPerDevicePinnedMemoryLimit[" + quote_text(it.key()) + "]");
      if (!bytes) return bytes.error();
      out.per_device_pinned[it.key()] = *bytes;
    }
  return out;
}

Result<TimeSliceInterval> parse_interval(const json& j, const std::string& path) {
  if (auto e = only_known(j, path, {"interval"})) return *e;
  auto name = string_member(j, "interval", path);
  if (!name) return name.error();
  if (name->empty()) return TimeSliceInterval::Default;
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

Result<uint64_t> parse_quantity_bytes(std::string_view text) {
  const std::string shown = quote_text(text);
  if (text.empty()) return Error::invalid("quantity is empty");
  if (text.front() == '+') text.remove_prefix(1);
  if (!text.empty() && text.front() == '-') return Error::invalid("quantity " + shown + " is negative");
  size_t i = 0;
  // Whole part and fraction as one integer scaled by 10^fraction_digits. With at most 20 digits
  // (< 2^67) times the largest unit (2^60) the product stays below 2^127: no overflow in __int128.
  u128 mantissa = 0;
  int fraction_digits = 0, digits = 0;
  bool dot = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (c == '.' && !dot) {
      dot = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    if (++digits > 20) return Error::invalid("quantity " + shown + " has too many digits");
    mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
    if (dot) ++fraction_digits;
  }
  if (digits == 0) return Error::invalid("quantity " + shown + " does not start with a number");
  const std::string_view suffix = text.substr(i);
  struct Unit {
    std::string_view name;
    u128 factor;
  };
  constexpr u128 kKi = 1024, kK = 1000;
  const std::array<Unit, 13> units{{{"", 1},
                                    {"Ki", kKi},
                                    {"Mi", kKi * kKi},
                                    {"Gi", kKi * kKi * kKi},
                                    {"Ti", kKi * kKi * kKi * kKi},
                                    {"Pi", kKi * kKi * kKi * kKi * kKi},
                                    {"Ei", kKi * kKi * kKi * kKi * kKi * kKi},
                                    {"k", kK},
                                    {"M", kK * kK},
                                    {"G", kK * kK * kK},
                                    {"T", kK * kK * kK * kK},
                                    {"P", kK * kK * kK * kK * kK},
                                    {"E", kK * kK * kK * kK * kK * kK}}};
  for (const auto& u : units) {
    if (u.name != suffix) continue;
    u128 divisor = 1;
    for (int k = 0; k < fraction_digits; ++k) divisor *= 10;
    const u128 bytes = (mantissa * u.factor + divisor - 1) / divisor;
    if (bytes > static_cast<u128>(std::numeric_limits<int64_t>::max()))
      return Error::invalid("quantity " + shown + " is larger than 2^63 bytes");
    return static_cast<uint64_t>(bytes);
  }
  return Error::invalid("quantity " + shown + " has an unknown suffix " + quote_text(suffix) +
                        " (Ki, Mi, Gi, Ti, Pi, Ei, k, M, G, T, P, E)");
}

}  // namespace kgpu::dra
