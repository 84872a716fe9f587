#pragma once
// HealthMonitor: ONE node-wide thread that waits on an NVML event set (XID critical errors and
// double-bit ECC errors of every GPU that supports them), turns what it sees into HealthEvents and
// re-probes unhealthy devices until they recover.
//
// Hand-off: events go into a bounded queue drained by a dispatcher thread that runs the callback,
// so a slow consumer (re-planning, a ListAndWatch stream) never blocks the NVML wait. When the
// queue is full the newest event is dropped, counted and logged (at 1024 pending events something
// is already badly wrong downstream).
//
// Wake-ups: while every device is healthy the thread sleeps inside nvmlEventSetWait with
// `idle_wait_ms` as timeout. NVML offers no way to interrupt that wait, so the timeout is what
// bounds stop(): stop() waits up to `stop_grace` (longer than the idle wait) for the thread and
// joins it. If it is still inside NVML after that, stop() returns false and the thread is NEVER
// detached: the monitor keeps it (it owns its state through a shared pointer, never calls the
// callback after stop(), and frees its event set when the wait returns). The owner keeps such a
// monitor until finished() says the thread is out, then destroys it (which joins); and at exit,
// while any is unfinished, it leaves the process with std::_Exit, since a thread inside NVML must
// not meet the library's static destructors. The default of 500 ms keeps daemon shutdown under a
// second at the cost of two wake-ups a second of this one thread; a caller that exits with _Exit
// may raise it (minutes) to get an idle daemon with no wake-ups.
// While a device is unhealthy (and recovery is on) the wait is shortened to the next probe.
// Recovery: an unhealthy device is probed (handle by UUID + a PCI info query) first after
// recovery_probe_interval_ms, backing off to recovery_probe_max_interval_ms while probes fail; once
// it has answered correctly and seen no new event for recovery_quiet_period_ms, Recovered is
// emitted. Devices marked by a MarkUnhealthyUntilReset action are never probed: they come back only
// when the daemon re-discovers the node (restart or reload after the GPU was reset).
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <set>
#include <string>

#include "config/config.h"
#include "core/inventory.h"
#include "core/result.h"
#include "health/health_events.h"
#include "nvml/nvml_library.h"

namespace kgpu {

struct HealthMonitorOptions {
  HealthConfig config;
  uint32_t idle_wait_ms = 500;
  std::chrono::milliseconds stop_grace{1500};
  size_t queue_capacity = 1024;
  uint32_t wait_error_backoff_ms = 100;       // after an NVML wait error; doubles ...
  uint32_t wait_error_max_backoff_ms = 30000;  // ... up to this
};

struct HealthMonitorStats {
  uint64_t events_seen = 0;       // NVML events received for watched GPUs
  uint64_t events_ignored = 0;    // dropped by policy
  uint64_t events_delivered = 0;  // handed to the callback
  uint64_t events_dropped = 0;    // lost to a full queue
  uint64_t wait_errors = 0;
  uint64_t probes = 0;
  size_t watched_gpus = 0;        // GPUs with events registered
  size_t unhealthy_tracked = 0;   // devices waiting for recovery (or a reset)
};

class HealthMonitor {
 public:
  using Callback = std::function<void(const HealthEvent&)>;

  HealthMonitor(std::shared_ptr<NvmlLibrary> nvml, HealthMonitorOptions options, Callback callback);
  ~HealthMonitor();
  HealthMonitor(const HealthMonitor&) = delete;
  HealthMonitor& operator=(const HealthMonitor&) = delete;

  // Initialises NVML (held until the thread ends), registers events for the inventory's NVIDIA
  // GPUs and starts the threads. GPUs already unhealthy in the inventory are tracked for recovery
  // (by probes), except those in `until_reset` (marked by a MarkUnhealthyUntilReset action).
  // A GPU that cannot be watched is logged, not failed; only an NVML init or event-set failure is an
  // Error. With health checks disabled it starts nothing and succeeds.
  Status start(const Inventory& inventory, const std::set<std::string>& until_reset = {});
  // Stops delivering at once; joins the dispatcher, and the event thread within stop_grace.
  // False when the event thread is still inside NVML (see above): call again, or destroy the
  // monitor, only once finished(); the destructor of an unfinished monitor detaches as a last resort.
  bool stop();
  // The same with another grace: zero when the process is about to _Exit anyway.
  bool stop(std::chrono::milliseconds grace);
  // True when no thread of this monitor is inside NVML any more (or none was started).
  bool finished() const;
  // New policy (e.g. after a config reload), used from the next event on.
  void set_config(const HealthConfig& config);
  HealthMonitorStats stats() const;
  bool running() const;

  struct State;  // shared with the threads

 private:
  std::shared_ptr<State> state_;
};

}  // namespace kgpu
