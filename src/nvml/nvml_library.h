#pragma once
// NvmlLibrary: libnvidia-ml.so.1 loaded at run time with dlopen, its entry points resolved once
// (versioned names first, older names as fallbacks) and wrapped in typed calls that return
// Result values carrying NVML's own error string. The only code in kgpu that calls NVML.
//
// Thread safety: the symbol table is immutable after load() and NVML itself is thread-safe, so
// every wrapper may be called from any thread; init()/shutdown() reference counting is guarded by
// a mutex.
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/result.h"
#include "nvml/nvml_abi.h"

namespace kgpu {

// A Result that also remembers the raw nvmlReturn_t, so callers can tell "not supported" or
// "GPU is lost" from other failures without parsing text. It is a Result<T>, so it converts to one
// by slicing when it crosses a module border.
template <typename T>
class NvmlResult : public Result<T> {
 public:
  NvmlResult(T value) : Result<T>(std::move(value)) {}  // NOLINT(google-explicit-constructor)
  NvmlResult(nvmlReturn_t code, Error error) : Result<T>(std::move(error)), code_(code) {}
  nvmlReturn_t nvml_code() const { return code_; }

 private:
  nvmlReturn_t code_ = NVML_SUCCESS;
};

using NvmlStatus = NvmlResult<Ok>;

struct MigMode {
  bool current = false;
  bool pending = false;
};

struct FabricInfo {
  std::string cluster_uuid;  // formatted UUID; empty when the fabric is not set up
  uint32_t clique_id = 0;
  bool completed = false;    // the fabric manager finished registering this GPU
};

// One framebuffer reading, in bytes. `reserved` is known only through nvmlDeviceGetMemoryInfo_v2
// (driver >= 510); the older call leaves it empty.
struct MemoryReading {
  unsigned long long total = 0, free = 0, used = 0;
  std::optional<unsigned long long> reserved;
};

struct RemappedRows {
  unsigned correctable = 0, uncorrectable = 0;
  bool pending = false, failed = false;
};

// Which optional entry point variant was resolved; "" when absent. For logs and tests.
struct NvmlSymbolReport {
  std::string init, device_count, handle_by_index, pci_info, event_set_wait, attributes,
      compute_instance_info, fabric_info;
};

class NvmlLibrary {
 public:
  // Loads libnvidia-ml.so.1: under `driver_root` first (its usual library folders; skipped when the
  // root is "/" or empty), then the bare soname through the default loader path
  // (LD_LIBRARY_PATH, ld.so.cache). The error names every path tried and each dlerror().
  static Result<std::shared_ptr<NvmlLibrary>> load(const std::string& driver_root);
  // The same over several roots, in order (Config::driver_search_roots(): the driver root as mounted
  // in the plugin's container first, then the host driver root), then the bare soname.
  static Result<std::shared_ptr<NvmlLibrary>> load(const std::vector<std::string>& driver_roots);
  // Loads exactly this file (tests, benchmarks, an operator-configured path).
  static Result<std::shared_ptr<NvmlLibrary>> load_file(const std::string& path);
  // The candidate paths load() tries under a driver root, in order (pure; for messages and tests).
  static std::vector<std::string> candidate_paths(const std::string& driver_root);

  ~NvmlLibrary();
  NvmlLibrary(const NvmlLibrary&) = delete;
  NvmlLibrary& operator=(const NvmlLibrary&) = delete;

  const std::string& path() const { return path_; }
  const NvmlSymbolReport& symbols() const { return symbols_; }

  // Reference-counted nvmlInit/nvmlShutdown: NVML is initialised by the first init() and shut down
  // by the last matching shutdown(), so the health monitor and discovery can share one library.
  Status init();
  void shutdown();
  int init_count() const;

  // NVML's text for a return code ("GPU is lost"), or a fallback when nvmlErrorString is absent.
  std::string error_string(nvmlReturn_t code) const;

  // --- system ---
  NvmlResult<std::string> driver_version() const;
  NvmlResult<int> cuda_driver_version() const;

  // --- devices ---
  NvmlResult<unsigned> device_count() const;
  NvmlResult<nvmlDevice_t> device_by_index(unsigned index) const;
  NvmlResult<nvmlDevice_t> device_by_uuid(const std::string& uuid) const;
  NvmlResult<std::string> name(nvmlDevice_t d) const;
  NvmlResult<std::string> uuid(nvmlDevice_t d) const;
  NvmlResult<std::string> serial(nvmlDevice_t d) const;
  NvmlResult<unsigned> minor_number(nvmlDevice_t d) const;
  NvmlResult<nvmlPciInfo_t> pci_info(nvmlDevice_t d) const;
  NvmlResult<nvmlMemory_t> memory_info(nvmlDevice_t d) const;
  NvmlResult<std::pair<int, int>> compute_capability(nvmlDevice_t d) const;
  NvmlResult<nvmlDeviceArchitecture_t> architecture(nvmlDevice_t d) const;
  NvmlResult<nvmlBrandType_t> brand(nvmlDevice_t d) const;
  NvmlResult<FabricInfo> fabric_info(nvmlDevice_t d) const;
  NvmlResult<unsigned> addressing_mode(nvmlDevice_t d) const;  // NVML_DEVICE_ADDRESSING_MODE_*
  NvmlResult<unsigned> num_gpu_cores(nvmlDevice_t d) const;     // CUDA cores of a whole GPU

  // --- MIG ---
  NvmlResult<MigMode> mig_mode(nvmlDevice_t d) const;
  NvmlResult<unsigned> max_mig_device_count(nvmlDevice_t d) const;
  NvmlResult<nvmlDevice_t> mig_device_by_index(nvmlDevice_t d, unsigned index) const;
  NvmlResult<unsigned> gpu_instance_id(nvmlDevice_t mig) const;
  NvmlResult<unsigned> compute_instance_id(nvmlDevice_t mig) const;
  NvmlResult<nvmlDeviceAttributes_t> attributes(nvmlDevice_t mig) const;
  NvmlResult<nvmlGpuInstance_t> gpu_instance_by_id(nvmlDevice_t d, unsigned id) const;
  NvmlResult<nvmlGpuInstanceInfo_t> gpu_instance_info(nvmlGpuInstance_t gi) const;
  NvmlResult<nvmlGpuInstanceProfileInfo_t> gpu_instance_profile_info(nvmlDevice_t d, unsigned profile) const;

  // --- topology ---
  NvmlResult<nvmlGpuTopologyLevel_t> common_ancestor(nvmlDevice_t a, nvmlDevice_t b) const;
  NvmlResult<bool> nvlink_active(nvmlDevice_t d, unsigned link) const;
  NvmlResult<nvmlPciInfo_t> nvlink_remote_pci(nvmlDevice_t d, unsigned link) const;

  // --- events ---
  NvmlResult<unsigned long long> supported_event_types(nvmlDevice_t d) const;
  NvmlResult<nvmlEventSet_t> event_set_create() const;
  NvmlStatus register_events(nvmlDevice_t d, unsigned long long types, nvmlEventSet_t set) const;
  NvmlResult<nvmlEventData_t> event_set_wait(nvmlEventSet_t set, unsigned timeout_ms) const;
  NvmlStatus event_set_free(nvmlEventSet_t set) const;

  // --- telemetry (read at scrape time; every entry point optional, resolved on first use so a
  // daemon that never serves telemetry never looks them up, and a driver lacking one loses only
  // that reading: FUNCTION_NOT_FOUND) ---
  NvmlResult<nvmlUtilization_t> utilization(nvmlDevice_t d) const;
  NvmlResult<unsigned> encoder_utilization(nvmlDevice_t d) const;  // percent
  NvmlResult<unsigned> decoder_utilization(nvmlDevice_t d) const;  // percent
  NvmlResult<MemoryReading> memory_reading(nvmlDevice_t d) const;  // _v2 when exported, else v1
  NvmlResult<unsigned> temperature(nvmlDevice_t d) const;          // GPU sensor, degrees C
  NvmlResult<unsigned> memory_temperature(nvmlDevice_t d) const;   // NVML_FI_DEV_MEMORY_TEMP
  NvmlResult<unsigned> power_usage_mw(nvmlDevice_t d) const;
  NvmlResult<unsigned long long> total_energy_mj(nvmlDevice_t d) const;
  NvmlResult<unsigned> clock_mhz(nvmlDevice_t d, nvmlClockType_t type) const;
  NvmlResult<unsigned> pcie_replay_counter(nvmlDevice_t d) const;
  NvmlResult<unsigned long long> total_ecc_errors(nvmlDevice_t d, nvmlMemoryErrorType_t type,
                                                  nvmlEccCounterType_t counter) const;
  NvmlResult<RemappedRows> remapped_rows(nvmlDevice_t d) const;
  // Several field values in one call (each entry's nvmlReturn says whether that one answered).
  NvmlStatus field_values(nvmlDevice_t d, nvmlFieldValue_t* values, int count) const;
  // NVLink data sent + received over all links since the driver loaded, KiB (field values).
  NvmlResult<unsigned long long> nvlink_data_kib(nvmlDevice_t d) const;

  // The table of resolved entry points; nullptr for an optional one the library lacks.
  struct Symbols;
  struct TelemetrySymbols;

 private:
  NvmlLibrary(void* handle, std::string path);
  Status resolve();

  // Wraps a call's return code: success, or an Error naming the call and NVML's reason.
  template <typename T>
  NvmlResult<T> fail(const char* call, nvmlReturn_t code) const;

  void* handle_ = nullptr;
  std::string path_;
  std::unique_ptr<Symbols> sym_;
  const TelemetrySymbols& telemetry_symbols() const;
  mutable std::once_flag telemetry_once_;
  mutable std::unique_ptr<TelemetrySymbols> tel_;
  NvmlSymbolReport symbols_;
  mutable std::mutex init_mutex_;
  int init_count_ = 0;
};

// A field value as a number, whatever its value type; nullopt for an unknown type.
std::optional<double> field_number(const nvmlFieldValue_t& value);

// Maps an NVML return code to kgpu's error categories (e.g. GPU_IS_LOST -> Unavailable).
Error::Code nvml_error_code(nvmlReturn_t code);

// Parses an NVML bus id ("00000000:07:00.0", any case) into the sysfs form "0000:07:00.0"
// (lower case, domain cut to 4 hex digits). Returns "" when the text is not a bus id.
std::string sysfs_pci_address(const std::string& nvml_bus_id);

}  // namespace kgpu
