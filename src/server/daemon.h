#pragma once
// Daemon: the `kgpu plugin` orchestrator. config -> discovery -> plan -> one ResourceServer per
// resource, registered with the kubelet. One thread runs an event loop over a signalfd, an inotify
// watch of the device-plugin directory, an eventfd for posted work and two timerfds (registration
// and discovery retries): no polling, no periodic wake-ups.
//
// Every state change (health event, SIGHUP reload, rediscovery) goes through the loop thread and
// ends in apply(): a new plan is diffed against the old one; unchanged resources keep their
// endpoint, changed ones push ListAndWatch, removed ones stop (socket removed), added ones start
// and register. Every resource of the plan has a server, serving or not: one that cannot start
// (its socket's place taken, the directory missing) is logged with the reason and retried on the
// registration timer's backoff. Observers (labels, CDI, metrics) are called after each applied plan.
#include <chrono>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "core/inventory.h"
#include "core/resource_plan.h"
#include "core/result.h"
#include "server/server_events.h"
#include "server/serving_state.h"

namespace kgpu::rpc {
class Server;
}

namespace kgpu::server {

struct DaemonOptions {
  Config config;  // the initial effective config (already loaded and valid)
  // Builds the Inventory; an Error means the backend (NVML) could not start.
  std::function<Result<Inventory>(const Config&)> discover;
  // Reloads the config on SIGHUP; null: SIGHUP only rediscovers.
  std::function<Result<Config>()> reload_config;
  // Post-processes every plan before it is served (e.g. withholds MPS resources whose control
  // daemon is not ready). While it leaves out resources the plan had, the daemon re-plans every
  // `withheld_replan_interval` so they appear as soon as the filter lets them through.
  std::function<ResourcePlan(const Config&, ResourcePlan)> plan_filter;
  // Which devices the device-plugin API serves, when another API (the DRA driver) owns the rest:
  // applied to every plan before plan_filter; what it leaves out is the other API's, not withheld
  // (no re-planning). Null: the device-plugin API serves everything.
  std::function<ResourcePlan(const Inventory&, ResourcePlan)> api_share;
  std::chrono::milliseconds withheld_replan_interval{1000};
  // Run first when the daemon stops (SIGTERM), before any socket is removed; may be null. The
  // plugin's exit path releases the process's inotify watches there (core/inotify_hub.h).
  std::function<void()> on_shutdown;
  // Hears about Allocate / GetPreferredAllocation / registrations (metrics); may be null.
  std::shared_ptr<ServerEvents> events;
  std::chrono::milliseconds register_timeout{2000};
  // A kubelet that accepted Register but opened no ListAndWatch within this time is warned about
  // (its gRPC may be failing to talk to ours: the node then has zero devices of that resource).
  std::chrono::milliseconds first_list_deadline{5000};
  std::chrono::milliseconds register_backoff_initial{2};
  std::chrono::milliseconds register_backoff_max{5000};
  std::chrono::milliseconds discovery_backoff_initial{1000};
  std::chrono::milliseconds discovery_backoff_max{300000};
};

using PlanObserver = std::function<void(const Config&, const Inventory&, const ResourcePlan&)>;

class Daemon {
 public:
  explicit Daemon(DaemonOptions options);  // blocks SIGTERM/SIGINT/SIGHUP for the process
  ~Daemon();
  Daemon(const Daemon&) = delete;
  Daemon& operator=(const Daemon&) = delete;

  // Blocks SIGTERM, SIGINT and SIGHUP in the calling thread (and threads it creates later), so
  // only the daemon's signalfd sees them. Call before starting any other thread.
  static void block_signals();

  // Runs until SIGTERM/SIGINT or stop(). Returns the process exit code: 0 after a clean stop,
  // 1 when start-up fails (discovery with failOnInitError=true, a socket path too long, ...).
  int run();

  // Thread-safe. Applies `change` to the current inventory on the loop thread, then re-plans.
  void update_inventory(std::function<Inventory(const Inventory&)> change);
  // Thread-safe. Called on the loop thread after every applied plan (and once at start-up).
  // Register before run().
  void on_plan_changed(PlanObserver observer);
  void request_reload();  // as SIGHUP
  void stop();            // as SIGTERM

  StatePtr state() const;  // the current snapshot (null before run() has planned)
  // The gRPC transport the daemon serves on (one thread for every socket); other kubelet-facing
  // services of the process (the DRA driver) share it.
  std::shared_ptr<rpc::Server> transport() const;
  std::string plugin_dir() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The device-plugin directory for a kubelet socket path: its parent directory.
std::string plugin_dir_of(const std::string& kubelet_socket);

// Whether kgpu can serve sockets in the device-plugin folder `dir` at start: NotFound when it does
// not exist (kgpu does not create it: a missing folder means a wrong --kubelet-socket or a missing
// mount, and a created one would never be seen by the kubelet), FailedPrecondition when it is not a
// folder or not writable. Each message names the folder and what to do.
Result<Ok> check_plugin_dir(const std::string& dir);

}  // namespace kgpu::server
