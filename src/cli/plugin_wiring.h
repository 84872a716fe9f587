#pragma once
// The daemon's optional parts, plugged into server::Daemon by `kgpu plugin`: metrics, the health
// monitor, the node-labels writer and the CDI spec writer. Each is an observer of applied plans
// (Daemon::on_plan_changed, called on the daemon's loop thread), so each re-evaluates on every
// inventory or config change instead of on a timer.
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "core/dir_watch.h"
#include "core/inventory.h"
#include "core/unique_fd.h"
#include "core/resource_plan.h"
#include "health/monitor.h"
#include "kube/node_feature_sync.h"
#include "labels/labels.h"
#include "metrics/metrics.h"
#include "server/daemon.h"
#include "server/node_discovery.h"
#include "server/server_events.h"

namespace kgpu::cli {

// Server events recorded into the Prometheus registry.
class MetricsEvents final : public server::ServerEvents {
 public:
  explicit MetricsEvents(Metrics& metrics) : metrics_(metrics) {}
  void allocated(const std::string& resource, double seconds, const std::vector<size_t>& devices) override;
  void allocate_refused(const std::string& resource, double seconds) override;
  void preferred(const std::string& resource, double seconds) override;
  void registration(const std::string& resource, bool ok) override;
  void unregistered(const std::string& resource) override;
  void config_reloaded(bool ok) override;

 private:
  Metrics& metrics_;
};

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

// Health of sysfs-backed devices (AMD, Intel, generic groups): inotify on the /dev folders whose
// entries come and go with the devices (sysfs itself does not support inotify); on a change the
// sysfs backends are rescanned and a device that vanished leaves the healthy set, one that came
// back rejoins it. The watches re-arm themselves (core/dir_watch.h): devtmpfs removes an empty
// /dev/dri when a driver unloads, and the folder that comes back is watched again (and rescanned).
// No timer: an idle node causes no wake-ups.
class SysfsHealthWatcher {
 public:
  explicit SysfsHealthWatcher(server::Daemon& daemon) : daemon_(daemon) {}
  ~SysfsHealthWatcher();
  void on_plan(const Config& config, const Inventory& inventory, const ResourcePlan& plan);

 private:
  void stop();
  void run();

  server::Daemon& daemon_;
  std::vector<std::string> dirs_;
  std::thread thread_;
  std::optional<DirWatch> watch_;  // used by the watcher thread only while it runs
  UniqueFd stop_fd_;
  std::mutex mu_;  // guards config_ (read on the watcher thread)
  Config config_;
  bool planned_ = false;        // config_ / sysfs_devices_ describe an earlier plan
  bool sysfs_devices_ = false;  // the inventory had AMD / Intel / generic devices
};

// Writes the node-feature-discovery feature file on every plan (only when the labels changed)
// and removes it on exit unless keepLabelsOnExit. The file's folder is watched (re-arming, see
// core/dir_watch.h), so a folder that appears after start gets the file, and a file someone else
// deleted or replaced is written again at once, without a timer.
// With flags.useNodeFeatureAPI the labels go to the node's NodeFeature object instead (as GFD
// writes them; kube/node_feature_sync.h, on a thread of its own), and the file is removed; switched
// off again (or labels switched off), the object is deleted. An environment that cannot reach the
// API (no NODE_NAME, no service account) is logged and the file written instead.
class LabelsWriter {
 public:
  LabelsWriter(std::optional<int64_t> start_time, std::map<std::string, std::string> env)
      : start_time_(start_time), env_(std::move(env)) {}
  ~LabelsWriter();
  void on_plan(const Config& config, const Inventory& inventory, const ResourcePlan& plan);
  void on_exit();

 private:
  void watch_folder_of(const std::string& path);  // loop thread
  void stop_watch();
  void run();
  void write_locked(bool from_watch);  // mu_ held
  // Loop thread. True when the labels went to the NodeFeature (the file is not wanted then).
  bool to_node_feature(const Config& config, const Labels& labels);
  void remove_file_for_node_feature();  // the file we wrote, once the NodeFeature holds the labels

  std::optional<int64_t> start_time_;
  std::optional<LabelContext> context_;  // cached per context_key_ (GPUs + settings)
  std::string context_key_;
  bool keep_on_exit_ = false;
  std::mutex mu_;  // guards the file state below (the watcher thread rewrites the file)
  std::string path_;
  std::optional<Labels> wanted_;   // what the file should hold
  std::optional<Labels> written_;  // what it held after our last successful write
  bool ever_written_ = false;      // on_exit removes only a file we wrote
  // The folder watch and its thread (started and stopped on the loop thread).
  std::string watched_path_;
  std::optional<DirWatch> watch_;
  UniqueFd stop_fd_;
  std::thread thread_;
  // The NodeFeature output (loop thread; on_exit after the loop ended).
  std::map<std::string, std::string> env_;
  std::unique_ptr<kube::NodeFeatureSync> node_feature_;  // created when first switched on
  std::string node_feature_problem_;                    // why it could not be created (logged once)
  std::optional<Labels> node_feature_labels_;           // last published; nullopt: withdrawn / never
};

// Writes the CDI spec when a cdi-* device list strategy is on, at start and whenever the devices or
// the CDI settings change (health changes alone do not rewrite it).
class CdiWriter {
 public:
  void on_plan(const Config& config, const Inventory& inventory, const ResourcePlan& plan);

 private:
  std::optional<std::string> last_key_;
};

}  // namespace kgpu::cli
