#include "telemetry/nvml_reader.h"

#include <spdlog/spdlog.h>

namespace kgpu::telemetry {

namespace {
constexpr double kMiB = 1024.0 * 1024.0;
// DCGM treats memory temperatures above this as a failed reading (a sensor glitch), not a value.
constexpr unsigned kMaxMemoryTemperature = 200;

// Calls a GPU model simply lacks are not problems: logged at debug, not as warnings.
bool unsupported(nvmlReturn_t code) {
  return code == NVML_ERROR_NOT_SUPPORTED || code == NVML_ERROR_FUNCTION_NOT_FOUND;
}
}  // namespace

NvmlReader::NvmlReader(std::shared_ptr<NvmlLibrary> nvml) : nvml_(std::move(nvml)) {
  if (auto st = nvml_->init(); st) {
    initialised_ = true;
  } else {
    spdlog::warn("telemetry: NVML init failed, GPU series stay empty: {}", st.error().message);
  }
}

NvmlReader::~NvmlReader() {
  if (initialised_) nvml_->shutdown();
}

void NvmlReader::set_targets(std::vector<Target> targets) {
  targets_ = std::move(targets);
  slots_.assign(targets_.size(), Slot{});
}

template <typename Why>
void NvmlReader::note(size_t slot, Field field, bool ok, nvmlReturn_t code, Why&& why) {
  State& state = slots_[slot].fields[static_cast<size_t>(field)];
  const State next = ok ? State::Answering : State::Failing;
  if (state == next) return;
  const Target& t = targets_[slot];
  const std::string who = t.gpu_instance_id ? fmt::format("{} GPU instance {}", t.uuid, *t.gpu_instance_id) : t.uuid;
  if (!ok) {
    // A reading the model never had is not a problem: debug. Anything else, or a loss later: warn.
    const bool quiet = state == State::Unknown && unsupported(code);
    spdlog::log(quiet ? spdlog::level::debug : spdlog::level::warn, "telemetry: {}: {} left out: {}", who,
                info(field).name, why());
  } else if (state == State::Failing) {
    spdlog::info("telemetry: {}: {} answers again", who, info(field).name);
  }
  state = next;
}

// GPU_IS_LOST: one line for the GPU, not one per series; its series come back when it answers.
bool NvmlReader::lost(size_t slot, nvmlReturn_t code) {
  Slot& s = slots_[slot];
  if (code != NVML_ERROR_GPU_IS_LOST) {
    if (code == NVML_SUCCESS && s.lost) {
      spdlog::info("telemetry: {}: GPU answers again; its series are back", targets_[slot].read_uuid);
      s.lost = false;
      s.fields.fill(State::Unknown);
    }
    return false;
  }
  if (!s.lost)
    spdlog::warn("telemetry: {}: GPU is lost; its series are left out until it answers again", targets_[slot].read_uuid);
  s.lost = true;
  return true;
}

template <typename T>
bool NvmlReader::take(size_t slot, Field field, const NvmlResult<T>& result) {
  ++calls_;
  const nvmlReturn_t code = result ? NVML_SUCCESS : result.nvml_code();
  if (lost(slot, code)) return false;
  note(slot, field, static_cast<bool>(result), code, [&] { return result.error().message; });
  return static_cast<bool>(result);
}

void NvmlReader::nvlink_rate(size_t slot, unsigned long long kib, Reading& r) {
  Slot& s = slots_[slot];
  const auto now = std::chrono::steady_clock::now();
  const double seconds = std::chrono::duration<double>(now - s.nvlink_at).count();
  // A counter that went back (driver reload) starts a new interval instead of a negative rate.
  if (s.nvlink_kib && kib >= *s.nvlink_kib && seconds > 0)
    r[Field::NvlinkBandwidthTotal] = static_cast<double>(kib - *s.nvlink_kib) / seconds / 1000.0;
  s.nvlink_kib = kib;
  s.nvlink_at = now;
}

namespace {
// The counters one nvmlDeviceGetFieldValues call answers (DCGM reads these as field values too).
struct BatchField {
  unsigned id;
  Field field;
};
constexpr BatchField kBatch[] = {
    {NVML_FI_DEV_MEMORY_TEMP, Field::MemoryTemp},
    {NVML_FI_DEV_TOTAL_ENERGY_CONSUMPTION, Field::TotalEnergyConsumption},
    {NVML_FI_DEV_PCIE_REPLAY_COUNTER, Field::PcieReplayCounter},
    {NVML_FI_DEV_ECC_SBE_VOL_TOTAL, Field::EccSbeVolTotal},
    {NVML_FI_DEV_ECC_DBE_VOL_TOTAL, Field::EccDbeVolTotal},
    {NVML_FI_DEV_ECC_SBE_AGG_TOTAL, Field::EccSbeAggTotal},
    {NVML_FI_DEV_ECC_DBE_AGG_TOTAL, Field::EccDbeAggTotal},
    {NVML_FI_DEV_REMAPPED_COR, Field::CorrectableRemappedRows},
    {NVML_FI_DEV_REMAPPED_UNC, Field::UncorrectableRemappedRows},
    {NVML_FI_DEV_REMAPPED_FAILURE, Field::RowRemapFailure},
    {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX, Field::NvlinkBandwidthTotal},
    {NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX, Field::NvlinkBandwidthTotal},
};
constexpr size_t kBatchSize = sizeof kBatch / sizeof kBatch[0];
}  // namespace

bool NvmlReader::read_fields(size_t slot, nvmlDevice_t h, Reading& r) {
  nvmlFieldValue_t values[kBatchSize]{};
  for (size_t i = 0; i < kBatchSize; ++i) {
    values[i].fieldId = kBatch[i].id;
    // NVLink throughput: all links (DCGM's scope); the other fields ignore the scope.
    values[i].scopeId = kBatch[i].field == Field::NvlinkBandwidthTotal ? 0xFFFFFFFFU : 0;
  }
  auto st = nvml_->field_values(h, values, static_cast<int>(kBatchSize));
  ++calls_;
  if (!st && st.nvml_code() == NVML_ERROR_FUNCTION_NOT_FOUND) return false;
  if (lost(slot, st ? NVML_SUCCESS : st.nvml_code())) return true;
  unsigned long long nvlink_kib = 0;
  int nvlink_parts = 0;
  bool nvlink_ok = true;
  for (size_t i = 0; i < kBatchSize; ++i) {
    const BatchField& b = kBatch[i];
    const nvmlReturn_t code = st ? values[i].nvmlReturn : st.nvml_code();
    auto number = code == NVML_SUCCESS ? field_number(values[i]) : std::nullopt;
    if (b.field == Field::NvlinkBandwidthTotal) {
      nvlink_ok = nvlink_ok && number.has_value();
      if (number) nvlink_kib += static_cast<unsigned long long>(*number);
      if (++nvlink_parts < 2) continue;  // both directions read: note and rate once
      number = nvlink_ok ? std::optional<double>(0) : std::nullopt;
    }
    note(slot, b.field, number.has_value(), code, [&] {
      return st ? fmt::format("nvmlDeviceGetFieldValues(field {}): {}", b.id, nvml_->error_string(code))
                : st.error().message;
    });
    if (!number) continue;
    if (b.field == Field::NvlinkBandwidthTotal) {
      nvlink_rate(slot, nvlink_kib, r);
    } else if (b.field == Field::MemoryTemp) {
      if (*number <= kMaxMemoryTemperature) r[b.field] = *number;
    } else if (b.field == Field::RowRemapFailure) {
      r[b.field] = *number != 0 ? 1 : 0;
    } else {
      r[b.field] = *number;
    }
  }
  return true;
}

// Drivers without nvmlDeviceGetFieldValues: the same counters through their own calls.
void NvmlReader::read_counters_one_by_one(size_t slot, nvmlDevice_t h, Reading& r) {
  const NvmlLibrary& n = *nvml_;
  if (auto v = n.memory_temperature(h); take(slot, Field::MemoryTemp, v)) {
    if (*v <= kMaxMemoryTemperature) r[Field::MemoryTemp] = *v;
  }
  if (auto v = n.total_energy_mj(h); take(slot, Field::TotalEnergyConsumption, v))
    r[Field::TotalEnergyConsumption] = static_cast<double>(*v);
  if (auto v = n.pcie_replay_counter(h); take(slot, Field::PcieReplayCounter, v)) r[Field::PcieReplayCounter] = *v;
  struct Ecc {
    Field field;
    nvmlMemoryErrorType_t type;
    nvmlEccCounterType_t counter;
  };
  static constexpr Ecc kEcc[] = {
      {Field::EccSbeVolTotal, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_VOLATILE_ECC},
      {Field::EccDbeVolTotal, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC},
      {Field::EccSbeAggTotal, NVML_MEMORY_ERROR_TYPE_CORRECTED, NVML_AGGREGATE_ECC},
      {Field::EccDbeAggTotal, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_AGGREGATE_ECC},
  };
  for (const auto& e : kEcc) {
    if (auto v = n.total_ecc_errors(h, e.type, e.counter); take(slot, e.field, v))
      r[e.field] = static_cast<double>(*v);
  }
  if (auto v = n.remapped_rows(h); take(slot, Field::UncorrectableRemappedRows, v)) {
    r[Field::UncorrectableRemappedRows] = v->uncorrectable;
    r[Field::CorrectableRemappedRows] = v->correctable;
    r[Field::RowRemapFailure] = v->failed ? 1 : 0;
  }
}

void NvmlReader::read_gpu(size_t slot, nvmlDevice_t h, Reading& r) {
  const NvmlLibrary& n = *nvml_;
  if (auto v = n.clock_mhz(h, NVML_CLOCK_SM); take(slot, Field::SmClock, v)) r[Field::SmClock] = *v;
  if (auto v = n.clock_mhz(h, NVML_CLOCK_MEM); take(slot, Field::MemClock, v)) r[Field::MemClock] = *v;
  if (auto v = n.temperature(h); take(slot, Field::GpuTemp, v)) r[Field::GpuTemp] = *v;
  if (auto v = n.power_usage_mw(h); take(slot, Field::PowerUsage, v)) r[Field::PowerUsage] = *v / 1000.0;
  if (auto v = n.utilization(h); take(slot, Field::GpuUtil, v)) {
    r[Field::GpuUtil] = v->gpu;
    r[Field::MemCopyUtil] = v->memory;
  }
  if (auto v = n.encoder_utilization(h); take(slot, Field::EncUtil, v)) r[Field::EncUtil] = *v;
  if (auto v = n.decoder_utilization(h); take(slot, Field::DecUtil, v)) r[Field::DecUtil] = *v;
  read_instance(slot, h, r);
  if (!read_fields(slot, h, r)) read_counters_one_by_one(slot, h, r);
}

void NvmlReader::read_instance(size_t slot, nvmlDevice_t h, Reading& r) {
  if (auto v = nvml_->memory_reading(h); take(slot, Field::FbUsed, v)) {
    // Whole MiB, as DCGM reports them.
    r[Field::FbFree] = static_cast<double>(v->free / static_cast<unsigned long long>(kMiB));
    r[Field::FbUsed] = static_cast<double>(v->used / static_cast<unsigned long long>(kMiB));
    if (v->reserved) r[Field::FbReserved] = static_cast<double>(*v->reserved / static_cast<unsigned long long>(kMiB));
  }
}

size_t NvmlReader::read(std::vector<Reading>& readings) {
  calls_ = 0;
  readings.resize(targets_.size());
  for (size_t i = 0; i < targets_.size(); ++i) {
    Reading& r = readings[i];
    r.clear();
    if (!initialised_) continue;
    Slot& slot = slots_[i];
    if (slot.handle == nullptr) {
      auto h = nvml_->device_by_uuid(targets_[i].read_uuid);
      ++calls_;
      if (!h) {
        if (slot.handle_state != State::Failing)
          spdlog::warn("telemetry: {}: no NVML handle, its series are left out: {}", targets_[i].read_uuid,
                       h.error().message);
        slot.handle_state = State::Failing;
        continue;
      }
      if (slot.handle_state == State::Failing)
        spdlog::info("telemetry: {}: NVML handle found again", targets_[i].read_uuid);
      slot.handle_state = State::Answering;
      slot.handle = *h;
    }
    if (targets_[i].gpu_instance_id) {
      read_instance(i, slot.handle, r);
    } else {
      read_gpu(i, slot.handle, r);
    }
  }
  return calls_;
}

}  // namespace kgpu::telemetry
