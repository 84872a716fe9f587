#pragma once
// The GPU telemetry collector behind /metrics: on each scrape (never on a timer) it reads every
// entity through its ReadingSource, asks the AssignmentSource which containers hold what, and
// renders DCGM exporter's series. Concurrent scrapes share one read (single flight).
// Thread-safe: set_inventory() from the daemon's plan callback, append() from HTTP workers.
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/inventory.h"
#include "telemetry/attribution.h"
#include "telemetry/reading_source.h"
#include "telemetry/sample.h"
#include "telemetry/single_flight.h"

namespace kgpu::telemetry {

// The last XID the health monitor saw on a GPU (by GPU uuid); nullopt when none was seen.
using XidSource = std::function<std::optional<uint64_t>(const std::string& gpu_uuid)>;

struct CollectorOptions {
  std::string hostname;  // `Hostname` label (NODE_NAME, else the host name); empty: left out
  AssignmentSource pods;  // null: no pod attribution
  XidSource xids;         // null: DCGM_FI_DEV_XID_ERRORS left out
};

class Collector {
 public:
  Collector(std::unique_ptr<ReadingSource> source, CollectorOptions options);

  // The entities to read from now on (cheap; applied by the next scrape).
  void set_inventory(const Inventory& inventory);

  // One scrape: appends the exposition text to `out`. Never throws.
  void append(std::string& out);
  std::string render() {
    std::string out;
    append(out);
    return out;
  }

  // Reads performed so far and NVML calls of the last one (tests, benchmarks).
  uint64_t reads() const { return reads_.load(std::memory_order_relaxed); }
  size_t last_calls() const { return last_calls_.load(std::memory_order_relaxed); }
  // Scrapes now waiting for an in-flight read (tests line up concurrent scrapes with it).
  size_t waiting_scrapes() const { return flight_.waiting(); }

 private:
  std::shared_ptr<const std::string> scrape_once();

  std::unique_ptr<ReadingSource> source_;
  CollectorOptions options_;
  SingleFlight<std::string> flight_;

  std::mutex pending_mu_;
  std::optional<std::vector<Target>> pending_targets_;
  std::string pending_driver_version_;

  // Touched only inside the single flight.
  std::vector<Target> targets_;
  std::vector<Reading> readings_;
  NodeLabels node_;
  size_t last_size_ = 0;
  bool pods_failing_ = false;

  std::atomic<uint64_t> reads_{0};
  std::atomic<size_t> last_calls_{0};
};

}  // namespace kgpu::telemetry
