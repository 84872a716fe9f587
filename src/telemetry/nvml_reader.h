#pragma once
// Reads the telemetry of a set of entities through NVML, at scrape time. Handles are looked up
// once per entity set (by uuid) and kept; a scrape makes only the reading calls. A call that fails
// leaves just its field empty for that scrape; each (entity, field) logs once when it starts
// failing and once when it answers again, never on every scrape.
// Not thread-safe: the collector runs one read at a time (single flight).
#include <array>
#include <chrono>
#include <optional>
#include <cstdint>
#include <memory>
#include <vector>

#include "nvml/nvml_library.h"
#include "telemetry/reading_source.h"
#include "telemetry/sample.h"

namespace kgpu::telemetry {

class NvmlReader final : public ReadingSource {
 public:
  // Initialises NVML (reference counted with the daemon's other users) for the reader's lifetime.
  explicit NvmlReader(std::shared_ptr<NvmlLibrary> nvml);
  ~NvmlReader();
  NvmlReader(const NvmlReader&) = delete;
  NvmlReader& operator=(const NvmlReader&) = delete;

  // A new entity set: handles are resolved on the next read, failure states start afresh.
  void set_targets(std::vector<Target> targets) override;
  const std::vector<Target>& targets() const { return targets_; }

  // Reads every entity into `readings` (resized to targets(), storage reused across scrapes).
  // Returns the number of NVML calls made (for benchmarks).
  size_t read(std::vector<Reading>& readings) override;

 private:
  enum class State : uint8_t { Unknown, Answering, Failing };
  struct Slot {
    nvmlDevice_t handle = nullptr;
    State handle_state = State::Unknown;
    bool lost = false;  // GPU_IS_LOST: one log line for the GPU, not one per series
    // The previous NVLink counter reading: the bandwidth is a rate between two scrapes.
    std::optional<unsigned long long> nvlink_kib;
    std::chrono::steady_clock::time_point nvlink_at;
    std::array<State, kFieldCount> fields{};
  };

  template <typename T>
  bool take(size_t slot, Field field, const NvmlResult<T>& result);
  // Records whether `field` answered; logs only when that changes. `why` is built only to log.
  template <typename Why>
  void note(size_t slot, Field field, bool ok, nvmlReturn_t code, Why&& why);
  bool lost(size_t slot, nvmlReturn_t code);
  void read_gpu(size_t slot, nvmlDevice_t handle, Reading& r);
  // The counters NVML serves as field values, in one call; false when the driver lacks the call.
  bool read_fields(size_t slot, nvmlDevice_t handle, Reading& r);
  void read_counters_one_by_one(size_t slot, nvmlDevice_t handle, Reading& r);
  void nvlink_rate(size_t slot, unsigned long long kib, Reading& r);
  void read_instance(size_t slot, nvmlDevice_t handle, Reading& r);

  std::shared_ptr<NvmlLibrary> nvml_;
  bool initialised_ = false;
  std::vector<Target> targets_;
  std::vector<Slot> slots_;
  size_t calls_ = 0;
};

}  // namespace kgpu::telemetry
