#include "cli/health_wiring.h"

#include <algorithm>

#include <spdlog/spdlog.h>

#include "health/health_events.h"

namespace kgpu::cli {

namespace {

std::vector<std::string> nvidia_uuids(const Inventory& inventory) {
  std::vector<std::string> out;
  for (const auto& g : inventory.gpus)
    if (g.vendor == Vendor::Nvidia) out.push_back(g.uuid);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

HealthWiring::HealthWiring(server::Daemon& daemon, std::shared_ptr<server::NodeDiscovery> discovery, Metrics* metrics)
    : daemon_(daemon), discovery_(std::move(discovery)), metrics_(metrics) {}

HealthWiring::~HealthWiring() {
  // Only unfinished when the caller did not leave with _Exit; each such monitor then leaves its
  // thread behind with an error (HealthMonitor::~HealthMonitor) rather than terminate.
  stop();
}

void HealthWiring::on_plan(const Config& config, const Inventory& inventory, const ResourcePlan&) {
  {
    std::lock_guard lock(mu_);
    health_ = config.health;
  }
  reap_retired();
  auto uuids = nvidia_uuids(inventory);
  auto lost = lost_gpus(inventory);
  auto nvml = discovery_->nvml();
  // Switching checks on or off changes what is registered with NVML: that needs a new monitor. So
  // does a lost mark the monitor did not set or a lost GPU it did not see come back (see header).
  const bool lost_known = lost == known_lost_ || !config.health.enabled;
  if (monitor_ && uuids == watched_ && config.health.enabled == watched_enabled_ && lost_known) {
    monitor_->set_config(config.health);
    return;
  }
  if (monitor_ && !lost_known)
    spdlog::info("health: GPUs lost or back per re-discovery; restarting the monitor to follow them");
  retire_monitor();
  watched_ = uuids;
  watched_enabled_ = config.health.enabled;
  known_lost_ = lost;
  std::erase_if(until_reset_, [&](const std::string& u) { return !std::binary_search(uuids.begin(), uuids.end(), u); });
  if (!nvml || uuids.empty()) return;
  HealthMonitorOptions options;
  options.config = config.health;
  // An idle node should not wake up: NVML's event wait cannot be interrupted, so rather than
  // waking twice a second to notice stop(), the thread sleeps in NVML for minutes and `kgpu
  // plugin` leaves with _Exit when a thread is still inside NVML at shutdown (see stop()).
  options.idle_wait_ms = 10 * 60 * 1000;
  options.stop_grace = std::chrono::milliseconds(100);
  const uint64_t generation = ++generation_;
  monitor_ = std::make_unique<HealthMonitor>(nvml, options,
                                             [this, generation](const HealthEvent& e) { on_event(e, generation); });
  if (auto st = monitor_->start(inventory, until_reset_); !st) {
    spdlog::error("health monitoring unavailable: {}; devices stay as discovered", st.error().message);
    retire_monitor();
    return;
  }
  if (!config.health.enabled)
    spdlog::info("health: checks disabled (DP_DISABLE_HEALTHCHECKS=all or kgpu.health.enabled=false)");
}

// On the monitor's dispatcher thread: never blocks on the daemon (update_inventory only posts).
void HealthWiring::on_event(const HealthEvent& event, uint64_t generation) {
  if (metrics_ && event.kind == HealthEvent::Kind::Xid) metrics_->count_xid(event.xid, event.gpu_uuid);
  HealthConfig health;
  {
    std::lock_guard lock(mu_);
    health = health_;
  }
  // The change runs on the daemon's loop thread, like on_plan, which it precedes.
  daemon_.update_inventory([this, event, health, generation](const Inventory& current) {
    auto update = apply_health_event(current, event, health);
    if (generation == generation_) {
      // The monitor that sent this knows the lost marks it causes: no restart for those.
      known_lost_ = lost_gpus(update.inventory);
      if (event_action(health, event) == XidAction::MarkUnhealthyUntilReset && !event.gpu_instance_id &&
          !event.compute_instance_id)
        until_reset_.insert(event.gpu_uuid);
    }
    if (!update.changed()) {
      spdlog::info("health: {} on {}: no device state changes ({})", event_cause(event), event.gpu_uuid,
                   to_string(event_action(health, event)));
      return current;
    }
    if (update.changes.empty())
      spdlog::info("health: {} on {}: the XID policy ignores it (no health change); DRA shows it as an "
                   "informational device taint",
                   event_cause(event), event.gpu_uuid);
    for (const auto& change : update.changes) {
      if (change.healthy)
        spdlog::info("health: {}", change.describe());
      else
        spdlog::warn("health: {}", change.describe());
    }
    return update.inventory;
  });
}

void HealthWiring::retire_monitor(std::chrono::milliseconds grace) {
  if (!monitor_) return;
  if (!monitor_->stop(grace)) retired_.push_back(std::move(monitor_));  // still inside NVML: keep it
  monitor_.reset();
}

void HealthWiring::reap_retired() {
  std::erase_if(retired_, [](const std::unique_ptr<HealthMonitor>& m) { return m->finished() && m->stop(); });
}

bool HealthWiring::stop() {
  retire_monitor(std::chrono::milliseconds(0));
  reap_retired();
  if (!retired_.empty())
    spdlog::debug("health: {} monitor thread(s) still inside NVML", retired_.size());
  return retired_.empty();
}

}  // namespace kgpu::cli
