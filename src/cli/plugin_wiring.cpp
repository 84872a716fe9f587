#include "cli/plugin_wiring.h"

#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include <spdlog/spdlog.h>

#include "core/thread_name.h"
#include "cdi/cdi.h"
#include "health/health_events.h"
#include "labels/context.h"
#include "labels/feature_file.h"
#include "sysfs/backends.h"

namespace kgpu::cli {

// --- metrics ---

void MetricsEvents::allocated(const std::string& resource, double seconds, const std::vector<size_t>& devices) {
  auto& r = metrics_.resource(resource);
  r.observe_allocate(seconds);
  for (size_t n : devices) r.count_allocation(n);
}

void MetricsEvents::allocate_refused(const std::string& resource, double seconds) {
  auto& r = metrics_.resource(resource);
  r.observe_allocate(seconds);
  r.count_allocate_error();
}

void MetricsEvents::preferred(const std::string& resource, double seconds) {
  metrics_.resource(resource).observe_preferred(seconds);
}

void MetricsEvents::registration(const std::string& resource, bool ok) {
  auto& r = metrics_.resource(resource);
  if (ok) {
    r.count_registration();
    r.set_registered(true);
  } else {
    r.count_registration_error();
  }
}

void MetricsEvents::unregistered(const std::string& resource) { metrics_.resource(resource).set_registered(false); }

void MetricsEvents::config_reloaded(bool ok) { metrics_.count_reload(ok); }

// --- health ---

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

// --- sysfs health ---

namespace {

void signal_stop(int stop_fd) {
  uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(stop_fd, &one, sizeof(one));
}

}  // namespace

SysfsHealthWatcher::~SysfsHealthWatcher() { stop(); }

void SysfsHealthWatcher::stop() {
  if (thread_.joinable()) {
    signal_stop(stop_fd_.get());
    thread_.join();
  }
  watch_.reset();
  stop_fd_.reset();
}

void SysfsHealthWatcher::on_plan(const Config& config, const Inventory& inventory, const ResourcePlan&) {
  bool sysfs_devices = std::any_of(inventory.gpus.begin(), inventory.gpus.end(),
                                   [](const Gpu& g) { return g.vendor != Vendor::Nvidia; });
  {
    std::lock_guard lock(mu_);
    // Health changes re-plan with the same config and devices: nothing to re-probe then.
    if (planned_ && config == config_ && sysfs_devices == sysfs_devices_) return;
    planned_ = true;
    config_ = config;
    sysfs_devices_ = sysfs_devices;
  }
  auto choice = choose_backends(config.backends, probe_node(config));
  std::vector<std::string> dirs;
  if (sysfs_devices && choice) {
    BackendChoice sysfs = *choice;
    sysfs.nvidia = false;
    dirs = rescan_watch_dirs(config, sysfs);
  }
  if (dirs == dirs_ && (thread_.joinable() || dirs.empty())) return;
  stop();
  dirs_ = dirs;
  if (dirs.empty()) return;
  auto watch = DirWatch::open(dirs, IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO);
  stop_fd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!watch || !stop_fd_.valid()) {
    spdlog::error("sysfs health: cannot watch the device folders ({}); devices are rechecked on reload only",
                  watch ? std::strerror(errno) : watch.error().message);
    stop();
    return;
  }
  watch_.emplace(std::move(*watch));
  // A folder that does not exist now is watched through its parent and picked up when it appears.
  spdlog::info("sysfs health: watching {} of {} device folders", watch_->watched_directly(), dirs.size());
  thread_ = std::thread([this] {
    name_this_thread("kgpu-sysfs-hlth");  // inotify on AMD/Intel/group device folders
    run();
  });
}

// The watch and stop fd are set up before the thread starts and reset only after it is joined.
void SysfsHealthWatcher::run() {
  while (watch_->wait_for_change(stop_fd_.get())) {
    Config config;
    {
      std::lock_guard lock(mu_);
      config = config_;
    }
    daemon_.update_inventory([config](const Inventory& current) {
      Inventory next = recheck_health(current, discover_sysfs_backends(config));
      for (const auto& g : next.gpus) {
        const Gpu* before = current.find_by_uuid(g.uuid);
        if (before && before->health == g.health) continue;
        if (g.health.healthy)
          spdlog::info("health: {} ({}): healthy{}", g.uuid, to_string(g.vendor), before ? " again" : " (new device)");
        else
          spdlog::warn("health: {} ({}): unhealthy: {}", g.uuid, to_string(g.vendor), g.health.reason);
      }
      return next;
    });
  }
}

// --- labels ---

LabelsWriter::~LabelsWriter() { stop_watch(); }

void LabelsWriter::on_plan(const Config& config, const Inventory& inventory, const ResourcePlan& plan) {
  keep_on_exit_ = config.keep_labels_on_exit;
  if (!config.labels_enabled) {
    stop_watch();  // a reload switched labels off: stop keeping the file
    if (node_feature_ && node_feature_labels_) node_feature_->withdraw();
    node_feature_labels_.reset();
    return;
  }
  // The context's files (machine type, PCI classes) change only with the GPUs or the settings, not
  // with health: read them again only then, not on every XID.
  auto stamp = config.gfd_no_timestamp ? std::nullopt : start_time_;
  std::string key = config.gfd_machine_type_file + "|" + config.sysfs_root + "|" + (stamp ? "t" : "");
  for (const auto& g : inventory.gpus) key += "|" + g.pci_bus_id;
  if (!context_ || key != context_key_) {
    context_ = read_label_context(config, inventory, stamp);
    context_key_ = std::move(key);
  }
  auto labels = node_labels(config, inventory, plan, *context_);
  if (to_node_feature(config, labels)) return;
  {
    std::lock_guard lock(mu_);
    const bool same_file = path_ == config.gfd_output_file;
    path_ = config.gfd_output_file;
    wanted_ = std::move(labels);
    if (!same_file || !written_ || *written_ != *wanted_) write_locked(false);
  }
  watch_folder_of(config.gfd_output_file);
}

bool LabelsWriter::to_node_feature(const Config& config, const Labels& labels) {
  if (!config.use_node_feature_api) {
    if (node_feature_ && node_feature_labels_) {
      spdlog::info("labels: flags.useNodeFeatureAPI is off now: deleting {}; the labels go to {}",
                   node_feature_->describe(), config.gfd_output_file);
      node_feature_->withdraw();
    }
    node_feature_labels_.reset();
    return false;
  }
  if (!node_feature_) {
    auto started = kube::NodeFeatureSync::start(env_);
    if (!started) {
      if (started.error().message != node_feature_problem_)
        spdlog::error("labels: {}; writing the feature file {} instead", started.error().message,
                      config.gfd_output_file);
      node_feature_problem_ = started.error().message;
      return false;
    }
    node_feature_ = std::move(*started);
    spdlog::info("labels: writing {} (node-feature-discovery's NodeFeature API, flags.useNodeFeatureAPI) on every "
                 "change", node_feature_->describe());
  }
  stop_watch();  // the file is not kept while the NodeFeature holds the labels
  remove_file_for_node_feature();
  if (node_feature_labels_ != labels) {
    node_feature_->publish(labels);
    node_feature_labels_ = labels;
  }
  return true;
}

void LabelsWriter::remove_file_for_node_feature() {
  std::lock_guard lock(mu_);
  if (!ever_written_ || path_.empty()) return;
  if (auto st = remove_feature_file(path_); !st)
    spdlog::error("labels: {}", st.error().message);
  else
    spdlog::info("labels: removed {}: the labels go to the NodeFeature object now", path_);
  ever_written_ = false;
  written_.reset();
}

void LabelsWriter::write_locked(bool from_watch) {
  if (!wanted_ || path_.empty()) return;
  auto wrote = write_feature_file(path_, *wanted_);
  if (!wrote) {
    spdlog::error("labels: {}{}", wrote.error().message,
                  from_watch ? "" : "; written as soon as the folder allows (it is watched)");
    return;
  }
  written_ = wanted_;
  ever_written_ = true;
  if (*wrote)
    spdlog::info("labels: {} {} labels to {}", from_watch ? "rewrote" : "wrote", wanted_->size(), path_);
}

// Loop thread. One watch on the file's folder; moved when the output file setting changes.
void LabelsWriter::watch_folder_of(const std::string& path) {
  if (path == watched_path_ && thread_.joinable()) return;
  stop_watch();
  watched_path_ = path;
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = (parent.empty() ? std::filesystem::path(".") : parent).string();
  // The file deleted or replaced by someone else, or written by us (then the content compares equal).
  auto watch = DirWatch::open({dir}, IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO | IN_CLOSE_WRITE);
  stop_fd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!watch || !stop_fd_.valid()) {
    spdlog::warn("labels: cannot watch {} ({}); the file is rewritten on plan changes only", dir,
                 watch ? std::strerror(errno) : watch.error().message);
    stop_fd_.reset();
    return;
  }
  watch_.emplace(std::move(*watch));
  {
    // A folder that appeared after a failed write but before the watch was armed sends no event
    // the watch could see: now that later changes are seen, write once more if it is there.
    std::error_code ec;
    std::lock_guard lock(mu_);
    if (wanted_ && (!written_ || *written_ != *wanted_) && std::filesystem::is_directory(dir, ec)) write_locked(true);
  }
  thread_ = std::thread([this] {
    name_this_thread("kgpu-labels");  // rewrites the labels file if someone removes it
    run();
  });
}

void LabelsWriter::stop_watch() {
  if (thread_.joinable()) {
    signal_stop(stop_fd_.get());
    thread_.join();
  }
  watch_.reset();
  stop_fd_.reset();
  watched_path_.clear();
}

void LabelsWriter::run() {
  while (watch_->wait_for_change(stop_fd_.get())) {
    std::lock_guard lock(mu_);
    write_locked(true);
  }
}

void LabelsWriter::on_exit() {
  if (node_feature_) {
    if (keep_on_exit_ && node_feature_labels_)
      spdlog::info("labels: leaving {} in place (keepLabelsOnExit)", node_feature_->describe());
    node_feature_->stop(!keep_on_exit_, std::chrono::seconds(5));
  }
  stop_watch();  // before removing: the watcher would write the file again
  std::lock_guard lock(mu_);
  if (!ever_written_) return;
  if (keep_on_exit_) {
    spdlog::info("labels: leaving {} in place (keepLabelsOnExit)", path_);
    return;
  }
  if (auto st = remove_feature_file(path_); !st)
    spdlog::error("labels: {}", st.error().message);
  else
    spdlog::info("labels: removed {}", path_);
}

// --- CDI ---

namespace {

// What the CDI spec depends on: the CDI settings and the NVIDIA devices (not their health).
std::string cdi_key(const Config& config, const Inventory& inventory) {
  std::string key = config.cdi_spec_dir + "|" + config.cdi_kind + "|" + config.nvidia_driver_root + "|" +
                    config.container_driver_root + "|" + config.dev_root() + "|" + config.nvidia_ctk_path + "|" +
                    std::to_string(static_cast<int>(config.device_id_strategy)) + "|" + inventory.driver_version;
  for (int id : config.imex_channel_ids) key += "|imex" + std::to_string(id);
  for (const auto& g : inventory.gpus) {
    if (g.vendor != Vendor::Nvidia) continue;
    key += "|" + g.uuid + "@" + std::to_string(g.index) + ":" + std::to_string(g.minor);
    for (const auto& m : g.mig_devices) key += "," + m.uuid + "@" + std::to_string(m.index);
  }
  return key;
}

}  // namespace

void CdiWriter::on_plan(const Config& config, const Inventory& inventory, const ResourcePlan&) {
  if (!config.has_strategy(DeviceListStrategy::CdiAnnotations) && !config.has_strategy(DeviceListStrategy::CdiCri))
    return;
  auto key = cdi_key(config, inventory);
  if (last_key_ && *last_key_ == key) return;
  auto written = generate_cdi_spec(config, inventory);
  if (!written) {
    spdlog::error("cdi: cannot write the CDI spec: {}; containers using CDI names will fail to start",
                  written.error().message);
    return;
  }
  for (const auto& w : written->warnings) spdlog::warn("cdi: {}", w);
  spdlog::info("cdi: wrote {}", written->path);
  last_key_ = std::move(key);
}

}  // namespace kgpu::cli
