// NVIDIA's resource.nvidia.com/v1beta1 device configs, decoded strictly (NVIDIA's driver uses a
// strict decoder, so a claim kgpu accepts is one NVIDIA's driver accepts too).
#include "dra/sharing/prepare_sharing.h"

#include <algorithm>
#include <array>
#include <limits>
#include <set>

#include "dra/model/claim.h"

namespace kgpu::dra {

namespace {

using nlohmann::json;

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

}  // namespace kgpu::dra
