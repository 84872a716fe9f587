// Telemetry readings (what DCGM exporter's default counters come from): utilization, encoder and
// decoder utilization, memory info _v2, memory temperature (field values), energy, clocks, PCIe
// replays, ECC totals, remapped rows. Values come from the fleet's `telemetry:` section, the
// control channel's `set` command, or deterministic defaults (telemetry_values.h). Like real NVML,
// a MIG device handle answers memory info only; the GPU-wide readings are NOT_SUPPORTED on it.
#include <type_traits>

#include "api_helpers.h"
#include "telemetry_values.h"

namespace kgpu::fake_nvml {
namespace {

constexpr unsigned long long kMiB = 1024ULL * 1024ULL;

// A GPU-wide reading: MIG handles are refused, `out` must be set.
template <typename Body>
nvmlReturn_t gpu_reading(nvmlDevice_t device, const char* call, const void* out, Body&& body) {
  return device_call(device, call, [&](Simulator& sim, nvmlDevice_st& d) {
    if (d.is_mig()) return NVML_ERROR_NOT_SUPPORTED;
    if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    return body(sim.gpu(d));
  });
}

unsigned as_uint(unsigned long long v) { return static_cast<unsigned>(v > 0xFFFFFFFFULL ? 0xFFFFFFFFULL : v); }

}  // namespace
}  // namespace kgpu::fake_nvml

using namespace kgpu::fake_nvml;

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device, nvmlUtilization_t* utilization) {
  return gpu_reading(device, "nvmlDeviceGetUtilizationRates", utilization, [&](const Gpu& gpu) {
    utilization->gpu = as_uint(telemetry_value(gpu, "gpu_util"));
    utilization->memory = as_uint(telemetry_value(gpu, "mem_util"));
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetEncoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                                              unsigned int* samplingPeriodUs) {
  return gpu_reading(device, "nvmlDeviceGetEncoderUtilization", utilization, [&](const Gpu& gpu) {
    if (samplingPeriodUs == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *utilization = as_uint(telemetry_value(gpu, "enc_util"));
    *samplingPeriodUs = 167000;
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetDecoderUtilization(nvmlDevice_t device, unsigned int* utilization,
                                                              unsigned int* samplingPeriodUs) {
  return gpu_reading(device, "nvmlDeviceGetDecoderUtilization", utilization, [&](const Gpu& gpu) {
    if (samplingPeriodUs == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *utilization = as_uint(telemetry_value(gpu, "dec_util"));
    *samplingPeriodUs = 167000;
    return NVML_SUCCESS;
  });
}

// The _v2 record adds `reserved`; free = total - reserved - used, as the driver reports it.
KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(nvmlDevice_t device, nvmlMemory_v2_t* memory) {
  return device_call(device, "nvmlDeviceGetMemoryInfo_v2", [&](Simulator& sim, nvmlDevice_st& d) {
    if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (memory->version != (static_cast<unsigned>(sizeof(nvmlMemory_v2_t)) | (2U << 24U)))
      return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
    const Gpu& gpu = sim.gpu(d);
    const unsigned long long total =
        d.is_mig() ? sim.gpu_instance(d).profile.memory_mib * kMiB : gpu.memory_total_mib * kMiB;
    const unsigned long long used = d.is_mig() ? 0 : gpu.memory_used_mib * kMiB;
    unsigned long long reserved = d.is_mig() ? 0 : telemetry_value(gpu, "reserved_mib") * kMiB;
    if (reserved > total - used) reserved = total - used;
    memory->total = total;
    memory->reserved = reserved;
    memory->used = used;
    memory->free = total - used - reserved;
    return NVML_SUCCESS;
  });
}

namespace kgpu::fake_nvml {
namespace {
// Field ids the simulated driver answers, and the reading behind each.
struct FieldKey {
  unsigned id;
  const char* key;
};
constexpr FieldKey kFieldKeys[] = {
    {NVML_FI_DEV_ECC_SBE_VOL_TOTAL, "ecc_sbe_volatile"},
    {NVML_FI_DEV_ECC_DBE_VOL_TOTAL, "ecc_dbe_volatile"},
    {NVML_FI_DEV_ECC_SBE_AGG_TOTAL, "ecc_sbe_aggregate"},
    {NVML_FI_DEV_ECC_DBE_AGG_TOTAL, "ecc_dbe_aggregate"},
    {NVML_FI_DEV_MEMORY_TEMP, "memory_temp_c"},
    {NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, "energy_mj"},
    {NVML_FI_DEV_PCIE_REPLAY_COUNTER, "pcie_replays"},
    {NVML_FI_DEV_REMAPPED_COR, "remapped_correctable"},
    {NVML_FI_DEV_REMAPPED_UNC, "remapped_uncorrectable"},
    {NVML_FI_DEV_REMAPPED_PENDING, "remap_pending"},
    {NVML_FI_DEV_REMAPPED_FAILURE, "remap_failure"},
    {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, "nvlink_tx_kib"},
    {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, "nvlink_rx_kib"},
};

nvmlReturn_t fill_field(const Gpu& gpu, bool mig, nvmlFieldValue_t& v) {
  if (mig) return NVML_ERROR_NOT_SUPPORTED;
  for (const auto& f : kFieldKeys) {
    if (f.id != v.fieldId) continue;
    const bool nvlink =
        v.fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX || v.fieldId == NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
    // NVLink counters: only on GPUs with ports, and only the all-links total (per-link scopes are
    // not simulated). The other fields ignore scopeId, as NVML does.
    if (nvlink && (gpu.nvlink_ports == 0 || v.scopeId != 0xFFFFFFFFU)) return NVML_ERROR_NOT_SUPPORTED;
    v.valueType = NVML_VALUE_TYPE_UNSIGNED_LONG_LONG;
    v.value.ullVal = telemetry_value(gpu, f.key);
    if (v.fieldId == NVML_FI_DEV_MEMORY_TEMP) {
      v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
      v.value.uiVal = as_uint(telemetry_value(gpu, f.key));
    }
    return NVML_SUCCESS;
  }
  return NVML_ERROR_NOT_SUPPORTED;
}
}  // namespace
}  // namespace kgpu::fake_nvml

// Answers the field ids of kFieldKeys from the GPU's readings; every other id (and every id on a
// MIG handle) gets its own NOT_SUPPORTED while the call itself succeeds, as NVML's does.
KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount, nvmlFieldValue_t* values) {
  return device_call(device, "nvmlDeviceGetFieldValues", [&](Simulator& sim, nvmlDevice_st& d) {
    if (values == nullptr || valuesCount < 0) return NVML_ERROR_INVALID_ARGUMENT;
    for (int i = 0; i < valuesCount; ++i) {
      values[i].timestamp = 0;
      values[i].latencyUsec = 0;
      values[i].nvmlReturn = fill_field(sim.gpu(d), d.is_mig(), values[i]);
    }
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t device, unsigned long long* energy) {
  return gpu_reading(device, "nvmlDeviceGetTotalEnergyConsumption", energy, [&](const Gpu& gpu) {
    *energy = telemetry_value(gpu, "energy_mj");
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type, unsigned int* clock) {
  return gpu_reading(device, "nvmlDeviceGetClockInfo", clock, [&](const Gpu& gpu) {
    switch (type) {
      case NVML_CLOCK_GRAPHICS:
      case NVML_CLOCK_SM:
      case NVML_CLOCK_VIDEO: *clock = as_uint(telemetry_value(gpu, "sm_clock_mhz")); return NVML_SUCCESS;
      case NVML_CLOCK_MEM: *clock = as_uint(telemetry_value(gpu, "mem_clock_mhz")); return NVML_SUCCESS;
    }
    return NVML_ERROR_INVALID_ARGUMENT;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetPcieReplayCounter(nvmlDevice_t device, unsigned int* value) {
  return gpu_reading(device, "nvmlDeviceGetPcieReplayCounter", value, [&](const Gpu& gpu) {
    *value = as_uint(telemetry_value(gpu, "pcie_replays"));
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                                          nvmlEccCounterType_t counterType,
                                                          unsigned long long* eccCounts) {
  return gpu_reading(device, "nvmlDeviceGetTotalEccErrors", eccCounts, [&](const Gpu& gpu) {
    const bool single = errorType == NVML_MEMORY_ERROR_TYPE_CORRECTED;
    const bool aggregate = counterType == NVML_AGGREGATE_ECC;
    if ((errorType != NVML_MEMORY_ERROR_TYPE_CORRECTED && errorType != NVML_MEMORY_ERROR_TYPE_UNCORRECTED) ||
        (counterType != NVML_VOLATILE_ECC && counterType != NVML_AGGREGATE_ECC))
      return NVML_ERROR_INVALID_ARGUMENT;
    *eccCounts = telemetry_value(gpu, std::string(single ? "ecc_sbe_" : "ecc_dbe_") + (aggregate ? "aggregate" : "volatile"));
    return NVML_SUCCESS;
  });
}

KGPU_NVML_EXPORT nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows,
                                                        unsigned int* uncRows, unsigned int* isPending,
                                                        unsigned int* failureOccurred) {
  return gpu_reading(device, "nvmlDeviceGetRemappedRows", corrRows, [&](const Gpu& gpu) {
    if (uncRows == nullptr || isPending == nullptr || failureOccurred == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *corrRows = as_uint(telemetry_value(gpu, "remapped_correctable"));
    *uncRows = as_uint(telemetry_value(gpu, "remapped_uncorrectable"));
    *isPending = telemetry_value(gpu, "remap_pending") != 0 ? 1 : 0;
    *failureOccurred = telemetry_value(gpu, "remap_failure") != 0 ? 1 : 0;
    return NVML_SUCCESS;
  });
}

static_assert(std::is_same_v<decltype(&nvmlDeviceGetUtilizationRates), nvmlDeviceGetUtilizationRates_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetEncoderUtilization), nvmlDeviceGetEncoderUtilization_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetDecoderUtilization), nvmlDeviceGetDecoderUtilization_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetMemoryInfo_v2), nvmlDeviceGetMemoryInfo_v2_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetFieldValues), nvmlDeviceGetFieldValues_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetTotalEnergyConsumption), nvmlDeviceGetTotalEnergyConsumption_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetClockInfo), nvmlDeviceGetClockInfo_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetPcieReplayCounter), nvmlDeviceGetPcieReplayCounter_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetTotalEccErrors), nvmlDeviceGetTotalEccErrors_fn>);
static_assert(std::is_same_v<decltype(&nvmlDeviceGetRemappedRows), nvmlDeviceGetRemappedRows_fn>);
static_assert(sizeof(nvmlFieldValue_t) == 40, "nvmlFieldValue_t is 40 bytes in NVML's ABI");
static_assert(sizeof(nvmlMemory_v2_t) == 40, "nvmlMemory_v2_t is 40 bytes in NVML's ABI");
