#include "health/monitor.h"

#include <algorithm>
#include <condition_variable>
#include <deque>
#include <map>
#include <mutex>
#include <thread>
#include <tuple>

#include <spdlog/spdlog.h>

#include "core/thread_name.h"
#include "config/xid_policy.h"

namespace kgpu {

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr unsigned kNoInstance = 0xFFFFFFFFU;
constexpr unsigned long long kWatchedEvents = nvmlEventTypeXidCriticalError | nvmlEventTypeDoubleBitEccError;

// A device under recovery: the GPU (gi = ci = -1) or one MIG instance.
using DeviceKey = std::tuple<std::string, int, int>;

struct Tracked {
  bool until_reset = false;
  Clock::time_point bad_since;   // last failure seen (event or failed probe)
  Clock::time_point next_probe;
  milliseconds interval{0};
};

bool nvml_gone(nvmlReturn_t code) {
  return code == NVML_ERROR_UNINITIALIZED || code == NVML_ERROR_DRIVER_NOT_LOADED ||
         code == NVML_ERROR_LIB_RM_VERSION_MISMATCH || code == NVML_ERROR_LIBRARY_NOT_FOUND;
}

}  // namespace

struct HealthMonitor::State {
  std::shared_ptr<NvmlLibrary> nvml;
  HealthMonitorOptions options;
  Callback callback;

  mutable std::mutex mu;
  std::condition_variable cv;        // queue and stop, for both threads
  HealthConfig config;               // guarded by mu
  bool stopping = false;
  bool event_thread_done = false;
  bool threads_started = false;    // after that, NVML resources belong to the event thread
  std::deque<HealthEvent> queue;
  HealthMonitorStats stats;
  bool overflow_logged = false;

  // Owned by the event thread after start().
  nvmlEventSet_t set = nullptr;
  bool nvml_initialised = false;
  std::map<nvmlDevice_t, std::string> uuid_by_handle;
  std::vector<std::string> gpus;     // every NVIDIA GPU of the inventory
  std::map<DeviceKey, Tracked> tracked;
  std::string last_wait_error;
  milliseconds wait_backoff{0};

  std::thread event_thread, dispatcher;

  HealthConfig current_config() const {
    std::lock_guard lock(mu);
    return config;
  }
  bool is_stopping() const {
    std::lock_guard lock(mu);
    return stopping;
  }

  // --- hand-off -----------------------------------------------------------------------------
  void emit(HealthEvent e) {
    std::lock_guard lock(mu);
    if (stopping) return;
    if (queue.size() >= options.queue_capacity) {
      ++stats.events_dropped;
      if (!overflow_logged) {
        spdlog::error("health: event queue full ({} pending); dropping {} event for {}", queue.size(),
                      to_string(e.kind), e.gpu_uuid);
        overflow_logged = true;
      }
      return;
    }
    queue.push_back(std::move(e));
    cv.notify_all();
  }

  void dispatch_loop() {
    std::unique_lock lock(mu);
    for (;;) {
      cv.wait(lock, [&] { return stopping || !queue.empty(); });
      if (stopping) return;
      HealthEvent e = std::move(queue.front());
      queue.pop_front();
      if (queue.empty()) overflow_logged = false;
      ++stats.events_delivered;
      lock.unlock();
      callback(e);
      lock.lock();
    }
  }

  // --- registration ---------------------------------------------------------------------------
  // Returns false when the GPU could not be reached (lost); logs anything else.
  bool watch_gpu(const std::string& uuid) {
    auto handle = nvml->device_by_uuid(uuid);
    if (!handle) {
      spdlog::warn("health: cannot watch {}: {}", uuid, handle.error().message);
      return !(handle.nvml_code() == NVML_ERROR_GPU_IS_LOST);
    }
    auto supported = nvml->supported_event_types(*handle);
    unsigned long long mask = supported ? (*supported & kWatchedEvents) : kWatchedEvents;
    if (mask == 0) {
      spdlog::info("health: {} reports neither XID nor ECC events; not watched", uuid);
      return true;
    }
    auto st = nvml->register_events(*handle, mask, set);
    if (!st) {
      if (st.nvml_code() == NVML_ERROR_NOT_SUPPORTED) {
        spdlog::info("health: {} is too old for health events; not watched", uuid);
        return true;
      }
      spdlog::warn("health: cannot register events for {}: {}", uuid, st.error().message);
      return st.nvml_code() != NVML_ERROR_GPU_IS_LOST;
    }
    uuid_by_handle[*handle] = uuid;
    std::lock_guard lock(mu);
    stats.watched_gpus = uuid_by_handle.size();
    return true;
  }

  bool is_watched(const std::string& uuid) const {
    return std::any_of(uuid_by_handle.begin(), uuid_by_handle.end(), [&](const auto& kv) { return kv.second == uuid; });
  }

  // --- recovery bookkeeping -------------------------------------------------------------------
  void track(const HealthEvent& e, bool until_reset, const HealthConfig& cfg) {
    if (!cfg.recovery_enabled && !until_reset) return;
    auto now = Clock::now();
    DeviceKey gpu_key{e.gpu_uuid, -1, -1};
    DeviceKey key{e.gpu_uuid, e.gpu_instance_id.value_or(-1), e.compute_instance_id.value_or(-1)};
    if (key != gpu_key) {
      // The GPU itself is already down: its recovery covers every instance on it.
      if (auto it = tracked.find(gpu_key); it != tracked.end()) key = gpu_key;
    } else {
      // A GPU-wide failure supersedes instance-level ones; it inherits their "until reset".
      for (auto it = tracked.begin(); it != tracked.end();) {
        if (std::get<0>(it->first) == e.gpu_uuid && it->first != gpu_key) {
          until_reset = until_reset || it->second.until_reset;
          it = tracked.erase(it);
        } else {
          ++it;
        }
      }
    }
    Tracked& t = tracked[key];
    t.until_reset = t.until_reset || until_reset;
    t.bad_since = now;
    t.interval = milliseconds(cfg.recovery_probe_interval_ms);
    t.next_probe = now + t.interval;
    std::lock_guard lock(mu);
    stats.unhealthy_tracked = tracked.size();
  }

  // A probe: the GPU answers a handle lookup and a basic query.
  NvmlStatus probe(const std::string& uuid) {
    {
      std::lock_guard lock(mu);
      ++stats.probes;
    }
    auto handle = nvml->device_by_uuid(uuid);
    if (!handle) return NvmlStatus(handle.nvml_code(), handle.error());
    auto pci = nvml->pci_info(*handle);
    if (!pci) return NvmlStatus(pci.nvml_code(), pci.error());
    return Ok{};
  }

  void run_due_probes() {
    const HealthConfig cfg = current_config();
    const auto now = Clock::now();
    const milliseconds quiet(cfg.recovery_quiet_period_ms);
    const milliseconds max_interval(std::max(cfg.recovery_probe_max_interval_ms, cfg.recovery_probe_interval_ms));
    std::vector<DeviceKey> recovered;
    for (auto& [key, t] : tracked) {
      if (t.until_reset || !cfg.recovery_enabled || t.next_probe > now) continue;
      const std::string& uuid = std::get<0>(key);
      auto result = probe(uuid);
      if (!result) {
        t.bad_since = now;
        t.interval = std::min(t.interval * 2, max_interval);
        t.next_probe = now + t.interval;
        spdlog::debug("health: {} still failing ({}); next probe in {} ms", uuid, result.error().message,
                      t.interval.count());
        continue;
      }
      if (now - t.bad_since >= quiet) {
        recovered.push_back(key);
        continue;
      }
      t.interval = milliseconds(cfg.recovery_probe_interval_ms);
      t.next_probe = std::min(now + t.interval, t.bad_since + quiet);
    }
    for (const auto& key : recovered) tracked.erase(key);
    {
      std::lock_guard lock(mu);
      stats.unhealthy_tracked = tracked.size();
    }
    for (const auto& key : recovered) {
      HealthEvent e{std::get<0>(key), HealthEvent::Kind::Recovered, 0, std::nullopt, std::nullopt, {}};
      if (std::get<1>(key) >= 0) e.gpu_instance_id = std::get<1>(key);
      if (std::get<2>(key) >= 0) e.compute_instance_id = std::get<2>(key);
      spdlog::info("health: {} answered correctly for the quiet period; recovered", std::get<0>(key));
      // A GPU lost before its events were registered gets them now.
      if (std::get<1>(key) < 0 && !is_watched(e.gpu_uuid) && set) watch_gpu(e.gpu_uuid);
      emit(std::move(e));
    }
  }

  std::optional<Clock::time_point> next_probe_time() const {
    std::optional<Clock::time_point> next;
    for (const auto& [key, t] : tracked)
      if (!t.until_reset && (!next || t.next_probe < *next)) next = t.next_probe;
    return next;
  }

  // --- events ---------------------------------------------------------------------------------
  void on_unhealthy(HealthEvent e) {
    const HealthConfig cfg = current_config();
    XidAction action = event_action(cfg, e);
    if (action == XidAction::Ignore) {
      {
        std::lock_guard lock(mu);
        ++stats.events_ignored;
      }
      spdlog::debug("health: {} on {} ignored by policy", event_cause(e), e.gpu_uuid);
      // Passed on untracked: it changes no health, yet DRA shows the latest such XID as an
      // informational device taint (apply_health_event notes it).
      if (e.kind == HealthEvent::Kind::Xid && cfg.enabled && cfg.xids_enabled) emit(std::move(e));
      return;
    }
    track(e, action == XidAction::MarkUnhealthyUntilReset, cfg);
    emit(std::move(e));
  }

  void on_nvml_event(const nvmlEventData_t& data) {
    auto it = uuid_by_handle.find(data.device);
    if (it == uuid_by_handle.end()) return;
    {
      std::lock_guard lock(mu);
      ++stats.events_seen;
    }
    HealthEvent e;
    e.gpu_uuid = it->second;
    if (data.gpuInstanceId != kNoInstance) e.gpu_instance_id = static_cast<int>(data.gpuInstanceId);
    if (data.computeInstanceId != kNoInstance) e.compute_instance_id = static_cast<int>(data.computeInstanceId);
    if (data.eventType & nvmlEventTypeXidCriticalError) {
      e.kind = HealthEvent::Kind::Xid;
      e.xid = data.eventData;
    } else if (data.eventType & nvmlEventTypeDoubleBitEccError) {
      e.kind = HealthEvent::Kind::EccDoubleBit;
    } else {
      return;
    }
    on_unhealthy(std::move(e));
  }

  // After a wait error: probe every GPU so a lost one (or NVML itself gone) is reported, while a
  // transient error leaves every device as it is.
  void probe_all_after_wait_error() {
    for (const auto& uuid : gpus) {
      if (tracked.count({uuid, -1, -1})) continue;
      auto result = probe(uuid);
      if (result || !(result.nvml_code() == NVML_ERROR_GPU_IS_LOST || nvml_gone(result.nvml_code()))) continue;
      on_unhealthy({uuid, HealthEvent::Kind::Lost, 0, std::nullopt, std::nullopt, result.error().message});
    }
  }

  void wait_error(const NvmlResult<nvmlEventData_t>& r) {
    {
      std::lock_guard lock(mu);
      ++stats.wait_errors;
    }
    if (r.error().message != last_wait_error) {
      spdlog::warn("health: waiting for NVML events failed: {}; retrying with backoff", r.error().message);
      last_wait_error = r.error().message;
    }
    probe_all_after_wait_error();
    wait_backoff = wait_backoff.count() == 0
                       ? milliseconds(options.wait_error_backoff_ms)
                       : std::min(wait_backoff * 2, milliseconds(options.wait_error_max_backoff_ms));
    std::unique_lock lock(mu);
    cv.wait_for(lock, wait_backoff, [&] { return stopping; });
  }

  void wait_ok() {
    if (!last_wait_error.empty()) {
      spdlog::info("health: NVML event wait works again");
      last_wait_error.clear();
    }
    wait_backoff = milliseconds(0);
  }

  unsigned next_timeout_ms() const {
    auto next = next_probe_time();
    if (!next) return options.idle_wait_ms;
    auto left = std::chrono::duration_cast<milliseconds>(*next - Clock::now()).count();
    if (left <= 0) return 0;
    return static_cast<unsigned>(std::min<long long>(left + 1, options.idle_wait_ms));
  }

  void event_loop() {
    while (!is_stopping()) {
      run_due_probes();
      unsigned timeout = next_timeout_ms();
      if (!set) {
        // Nothing to wait on in NVML (no GPU could be watched): sleep until the next probe or stop.
        std::unique_lock lock(mu);
        cv.wait_for(lock, milliseconds(timeout), [&] { return stopping; });
        continue;
      }
      auto r = nvml->event_set_wait(set, timeout);
      if (is_stopping()) break;
      if (r) {
        wait_ok();
        on_nvml_event(*r);
      } else if (r.nvml_code() == NVML_ERROR_TIMEOUT) {
        wait_ok();
      } else {
        wait_error(r);
      }
    }
    release_nvml();
    std::lock_guard lock(mu);
    event_thread_done = true;
    cv.notify_all();
  }

  void release_nvml() {
    if (set) {
      static_cast<void>(nvml->event_set_free(set));
      set = nullptr;
    }
    if (nvml_initialised) {
      nvml->shutdown();
      nvml_initialised = false;
    }
  }
};

HealthMonitor::HealthMonitor(std::shared_ptr<NvmlLibrary> nvml, HealthMonitorOptions options, Callback callback)
    : state_(std::make_shared<State>()) {
  state_->nvml = std::move(nvml);
  state_->config = options.config;
  state_->options = std::move(options);
  state_->callback = std::move(callback);
}

HealthMonitor::~HealthMonitor() {
  if (stop()) return;
  // The owner should have kept an unfinished monitor (see monitor.h); leaving its thread behind is
  // still better than std::terminate. Its shared state stays alive with it.
  spdlog::error("health: monitor destroyed while its event thread is inside NVML; thread left behind");
  state_->event_thread.detach();
}

Status HealthMonitor::start(const Inventory& inventory, const std::set<std::string>& until_reset) {
  State& s = *state_;
  if (s.event_thread.joinable() || s.dispatcher.joinable()) return Error::precondition("health monitor already started");
  const HealthConfig cfg = s.current_config();
  if (!cfg.enabled) {
    spdlog::info("health: checks disabled; no monitor");
    return ok_status();
  }
  if (auto st = s.nvml->init(); !st) return Error{st.error().code, "health monitor: " + st.error().message};
  s.nvml_initialised = true;
  auto set = s.nvml->event_set_create();
  if (!set) {
    s.release_nvml();
    return Error{set.error().code, "health monitor: " + set.error().message};
  }
  s.set = *set;

  for (const auto& g : inventory.gpus) {
    if (g.vendor != Vendor::Nvidia) continue;
    s.gpus.push_back(g.uuid);
    if (!g.health.healthy) {
      // Already failing (found by discovery, or marked before a monitor restart): watch it for
      // recovery and register its events once it is back, unless the mark lasts until a reset.
      s.track({g.uuid, HealthEvent::Kind::Lost, 0, std::nullopt, std::nullopt, g.health.reason},
              until_reset.count(g.uuid) > 0, cfg);
      continue;
    }
    if (!s.watch_gpu(g.uuid))
      s.on_unhealthy({g.uuid, HealthEvent::Kind::Lost, 0, std::nullopt, std::nullopt, "lost while registering events"});
  }
  spdlog::info("health: watching {} of {} GPU(s) for XID and ECC events", s.uuid_by_handle.size(), s.gpus.size());

  auto shared = state_;
  s.threads_started = true;
  s.dispatcher = std::thread([shared] {
    name_this_thread("kgpu-health");  // maps NVML events to devices, runs recovery probes
    shared->dispatch_loop();
  });
  s.event_thread = std::thread([shared] {
    name_this_thread("kgpu-nvml-event");  // parked in nvmlEventSetWait
    shared->event_loop();
  });
  return ok_status();
}

bool HealthMonitor::stop() { return stop(state_->options.stop_grace); }

bool HealthMonitor::stop(std::chrono::milliseconds grace) {
  State& s = *state_;
  {
    std::lock_guard lock(s.mu);
    s.stopping = true;
    s.cv.notify_all();
  }
  if (s.dispatcher.joinable()) s.dispatcher.join();
  if (s.event_thread.joinable()) {
    std::unique_lock lock(s.mu);
    bool done = s.cv.wait_for(lock, grace, [&] { return s.event_thread_done; });
    lock.unlock();
    if (!done) {
      // Blocked in nvmlEventSetWait, which cannot be interrupted: it finishes on its own at the
      // wait timeout and releases NVML. The thread stays ours (joinable) so that nobody loses
      // track of a thread inside NVML; expected with a long idle wait, so not a warning.
      spdlog::debug("health: event thread still inside NVML after {} ms", grace.count());
      return false;
    }
    s.event_thread.join();
  } else if (!s.threads_started) {
    s.release_nvml();
  }
  return true;
}

bool HealthMonitor::finished() const {
  std::lock_guard lock(state_->mu);
  return !state_->threads_started || state_->event_thread_done;
}

void HealthMonitor::set_config(const HealthConfig& config) {
  std::lock_guard lock(state_->mu);
  state_->config = config;
}

HealthMonitorStats HealthMonitor::stats() const {
  std::lock_guard lock(state_->mu);
  return state_->stats;
}

bool HealthMonitor::running() const {
  std::lock_guard lock(state_->mu);
  return !state_->stopping && state_->event_thread.joinable();
}

}  // namespace kgpu
