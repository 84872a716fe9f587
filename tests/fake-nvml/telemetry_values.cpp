#include "telemetry_values.h"

#include <algorithm>

namespace kgpu::fake_nvml {

namespace {

struct Key {
  const char* name;
  // default = base + step * GPU index, wrapped below `modulo` when it is not 0
  unsigned long long base, step, modulo;
};

// Defaults look like a lightly loaded datacenter GPU and differ per GPU, so golden files show
// that each series comes from its own GPU.
constexpr Key kKeys[] = {
    {"gpu_util", 5, 17, 101},
    {"mem_util", 3, 11, 101},
    {"enc_util", 0, 0, 0},
    {"dec_util", 0, 0, 0},
    {"memory_temp_c", 30, 1, 0},
    {"sm_clock_mhz", 1410, 0, 0},
    {"mem_clock_mhz", 1215, 0, 0},
    {"energy_mj", 1000000000ULL, 1000, 0},
    {"pcie_replays", 0, 0, 0},
    {"ecc_sbe_volatile", 0, 0, 0},
    {"ecc_dbe_volatile", 0, 0, 0},
    {"ecc_sbe_aggregate", 0, 0, 0},
    {"ecc_dbe_aggregate", 0, 0, 0},
    {"remapped_correctable", 0, 0, 0},
    {"remapped_uncorrectable", 0, 0, 0},
    {"remap_pending", 0, 0, 0},
    {"remap_failure", 0, 0, 0},
    {"reserved_mib", 0, 0, 0},
    {"nvlink_tx_kib", 0, 0, 0},
    {"nvlink_rx_kib", 0, 0, 0},
};

}  // namespace

const std::vector<std::string>& telemetry_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> out;
    for (const auto& k : kKeys) out.emplace_back(k.name);
    return out;
  }();
  return keys;
}

bool is_telemetry_key(const std::string& key) {
  const auto& keys = telemetry_keys();
  return std::find(keys.begin(), keys.end(), key) != keys.end();
}

unsigned long long telemetry_value(const Gpu& gpu, const std::string& key) {
  if (auto it = gpu.telemetry.find(key); it != gpu.telemetry.end()) return it->second;
  for (const auto& k : kKeys) {
    if (key != k.name) continue;
    unsigned long long v = k.base + k.step * gpu.index;
    return k.modulo ? v % k.modulo : v;
  }
  return 0;
}

bool set_reading(Gpu& gpu, const std::string& key, unsigned long long value, std::string& why) {
  if (is_telemetry_key(key)) {
    if ((key == "gpu_util" || key == "mem_util" || key == "enc_util" || key == "dec_util") && value > 100) {
      why = key + " is a percentage (0-100)";
      return false;
    }
    gpu.telemetry[key] = value;
    return true;
  }
  if (key == "used_mib") {
    if (value > gpu.memory_total_mib) {
      why = "used_mib exceeds the GPU's total_mib";
      return false;
    }
    gpu.memory_used_mib = value;
    return true;
  }
  if (key == "power_mw" || key == "temperature_c") {
    if (value > 0xFFFFFFFFULL) {
      why = key + " too large";
      return false;
    }
    (key == "power_mw" ? gpu.power_mw : gpu.temperature_c) = static_cast<unsigned>(value);
    return true;
  }
  why = "unknown reading '" + key + "'";
  return false;
}

}  // namespace kgpu::fake_nvml
