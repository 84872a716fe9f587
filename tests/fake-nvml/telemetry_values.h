// The simulated GPU readings behind the telemetry entry points (api_telemetry.cpp): names of the
// fleet file's `telemetry:` keys and of the control channel's `set` command, and the deterministic
// defaults a GPU reports for the keys its fleet entry leaves out. Pure data, no NVML state.
#pragma once
#include <string>
#include <vector>

#include "fleet.h"

namespace kgpu::fake_nvml {

// Every key `telemetry:` accepts (FLEET_FORMAT.md, "Telemetry").
const std::vector<std::string>& telemetry_keys();
bool is_telemetry_key(const std::string& key);

// The reading `key` of `gpu`: the fleet's (or a later `set`'s) value, else a default derived from
// the GPU's index, so two fleets with the same GPUs report the same numbers.
unsigned long long telemetry_value(const Gpu& gpu, const std::string& key);

// Applies `set <uuid> <key> <value>`: a telemetry key, or one of the GPU's plain readings
// (used_mib, power_mw, temperature_c). False with `why` for an unknown key or a bad value.
bool set_reading(Gpu& gpu, const std::string& key, unsigned long long value, std::string& why);

}  // namespace kgpu::fake_nvml
