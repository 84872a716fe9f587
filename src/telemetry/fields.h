#pragma once
// The GPU telemetry series kgpu serves, under DCGM exporter's metric names, Prometheus types and
// help texts (its etc/default-counters.csv), in that file's order so a scrape reads like one of
// dcgm-exporter's. Only fields NVML can answer directly are here: DCGM's profiling fields
// (DCGM_FI_PROF_*) need the DCGM host engine and are left out, never approximated.
#include <array>
#include <cstddef>
#include <cstdint>

namespace kgpu::telemetry {

enum class Field : uint8_t {
  SmClock,
  MemClock,
  MemoryTemp,
  GpuTemp,
  PowerUsage,
  TotalEnergyConsumption,
  PcieReplayCounter,
  GpuUtil,
  MemCopyUtil,
  EncUtil,
  DecUtil,
  XidErrors,
  FbFree,
  FbUsed,
  FbReserved,
  EccSbeVolTotal,
  EccDbeVolTotal,
  EccSbeAggTotal,
  EccDbeAggTotal,
  NvlinkBandwidthTotal,
  UncorrectableRemappedRows,
  CorrectableRemappedRows,
  RowRemapFailure,
};
inline constexpr size_t kFieldCount = static_cast<size_t>(Field::RowRemapFailure) + 1;

struct FieldInfo {
  const char* name;  // DCGM field name = Prometheus metric name
  const char* type;  // "gauge" | "counter"
  const char* help;
  bool floating;     // printed %f (DCGM's double fields) instead of %d
};

inline constexpr std::array<FieldInfo, kFieldCount> kFields{{
    {"DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz).", false},
    {"DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz).", false},
    {"DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C).", false},
    {"DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C).", false},
    {"DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W).", true},
    {"DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ).", false},
    {"DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries.", false},
    {"DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %).", false},
    {"DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %).", false},
    {"DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %).", false},
    {"DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %).", false},
    {"DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered.", false},
    {"DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB).", false},
    {"DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB).", false},
    {"DCGM_FI_DEV_FB_RESERVED", "gauge", "Framebuffer memory reserved (in MiB).", false},
    {"DCGM_FI_DEV_ECC_SBE_VOL_TOTAL", "counter", "Total number of single-bit volatile ECC errors.", false},
    {"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL", "counter", "Total number of double-bit volatile ECC errors.", false},
    {"DCGM_FI_DEV_ECC_SBE_AGG_TOTAL", "counter", "Total number of single-bit persistent ECC errors.", false},
    {"DCGM_FI_DEV_ECC_DBE_AGG_TOTAL", "counter", "Total number of double-bit persistent ECC errors.", false},
    // DCGM reports the rate over its last sampling interval (delta / seconds / 1000) under the CSV's
    // counter type; kgpu does the same over the interval since the previous scrape.
    {"DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes", false},
    {"DCGM_FI_DEV_UNCORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for uncorrectable errors", false},
    {"DCGM_FI_DEV_CORRECTABLE_REMAPPED_ROWS", "counter", "Number of remapped rows for correctable errors", false},
    {"DCGM_FI_DEV_ROW_REMAP_FAILURE", "gauge", "Whether remapping of rows has failed", false},
}};

constexpr const FieldInfo& info(Field f) { return kFields[static_cast<size_t>(f)]; }

}  // namespace kgpu::telemetry
