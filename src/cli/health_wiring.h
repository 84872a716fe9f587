#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/inventory.h"
#include "core/resource_plan.h"
#include "health/monitor.h"
#include "metrics/metrics.h"
#include "server/daemon.h"
#include "server/node_discovery.h"

namespace kgpu::cli {

// Runs the node's one HealthMonitor over the GPUs of the current inventory; restarts it when the
// set of NVIDIA GPUs changes (rediscovery, MIG reconfiguration), when checks are switched on or off,
// and when the GPUs marked lost changed by another path than the monitor's own events (a
// re-discovery that found a GPU missing, or found a lost one answering again): the new monitor then
// probes every lost GPU for recovery and registers events for every answering one, so recovery does
// not depend on which path noticed the loss. Events become inventory updates.
// A replaced monitor whose thread is still parked inside NVML is kept (never detached) until that
// thread is out; stop() reports any such thread so that the caller leaves with _Exit.
class HealthWiring {
 public:
  HealthWiring(server::Daemon& daemon, std::shared_ptr<server::NodeDiscovery> discovery, Metrics* metrics);
  ~HealthWiring();
  void on_plan(const Config& config, const Inventory& inventory, const ResourcePlan& plan);
  // False when a monitor thread (current or replaced) is still inside NVML (exit with _Exit).
  // Waits for none: the process leaves right after, and NVML's event wait cannot be cut short.
  bool stop();

 private:
  void on_event(const HealthEvent& event, uint64_t generation);
  // Stops the monitor; one still inside NVML after `grace` is kept until it finishes.
  void retire_monitor(std::chrono::milliseconds grace = std::chrono::milliseconds(100));
  void reap_retired();

  server::Daemon& daemon_;
  std::shared_ptr<server::NodeDiscovery> discovery_;
  Metrics* metrics_;  // may be null
  std::unique_ptr<HealthMonitor> monitor_;
  std::vector<std::unique_ptr<HealthMonitor>> retired_;  // stopped, thread still inside NVML
  std::vector<std::string> watched_;  // sorted NVIDIA GPU UUIDs the monitor watches
  bool watched_enabled_ = true;       // HealthConfig::enabled the monitor was started with
  // Loop thread only (on_plan and the update_inventory changes run there):
  uint64_t generation_ = 0;              // of monitor_; events of older monitors do not count
  std::vector<std::string> known_lost_;  // lost GPUs the current monitor knows of (lost_gpus())
  std::set<std::string> until_reset_;    // GPUs marked by a MarkUnhealthyUntilReset action
  std::mutex mu_;                     // guards health_ (read on the monitor's dispatcher thread)
  HealthConfig health_;
};

}  // namespace kgpu::cli
