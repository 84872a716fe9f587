#include "cli/plugin_wiring.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

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

HealthWiring::~HealthWiring() { stop(); }

void HealthWiring::on_plan(const Config& config, const Inventory& inventory, const ResourcePlan&) {
  {
    std::lock_guard lock(mu_);
    health_ = config.health;
  }
  auto uuids = nvidia_uuids(inventory);
  auto nvml = discovery_->nvml();
  // Switching checks on or off changes what is registered with NVML: that needs a new monitor.
  if (monitor_ && uuids == watched_ && config.health.enabled == watched_enabled_) {
    monitor_->set_config(config.health);
    return;
  }
  stop();
  watched_ = uuids;
  watched_enabled_ = config.health.enabled;
  if (!nvml || uuids.empty()) return;
  HealthMonitorOptions options;
  options.config = config.health;
  // An idle node should not wake up: NVML's event wait cannot be interrupted, so rather than
  // waking twice a second to notice stop(), the thread sleeps in NVML for minutes and `kgpu
  // plugin` leaves with _Exit when the thread is still inside NVML at shutdown (see stop()).
  options.idle_wait_ms = 10 * 60 * 1000;
  options.stop_grace = std::chrono::milliseconds(100);
  monitor_ = std::make_unique<HealthMonitor>(nvml, options, [this](const HealthEvent& e) { on_event(e); });
  if (auto st = monitor_->start(inventory); !st) {
    spdlog::error("health monitoring unavailable: {}; devices stay as discovered", st.error().message);
    monitor_.reset();
    return;
  }
  if (!config.health.enabled)
    spdlog::info("health: checks disabled (DP_DISABLE_HEALTHCHECKS=all or kgpu.health.enabled=false)");
}

// On the monitor's dispatcher thread: never blocks on the daemon (update_inventory only posts).
void HealthWiring::on_event(const HealthEvent& event) {
  if (metrics_ && event.kind == HealthEvent::Kind::Xid) metrics_->count_xid(event.xid, event.gpu_uuid);
  HealthConfig health;
  {
    std::lock_guard lock(mu_);
    health = health_;
  }
  daemon_.update_inventory([event, health](const Inventory& current) {
    auto update = apply_health_event(current, event, health);
    if (!update.changed()) {
      spdlog::info("health: {} on {}: no device state changes ({})", event_cause(event), event.gpu_uuid,
                   to_string(event_action(health, event)));
      return current;
    }
    for (const auto& change : update.changes) {
      if (change.healthy)
        spdlog::info("health: {}", change.describe());
      else
        spdlog::warn("health: {}", change.describe());
    }
    return update.inventory;
  });
}

bool HealthWiring::stop() {
  if (!monitor_) return true;
  bool clean = monitor_->stop();
  if (clean) monitor_.reset();
  else (void)monitor_.release();  // its thread still owns its state; see HealthMonitor::stop
  return clean;
}

// --- sysfs health ---

SysfsHealthWatcher::~SysfsHealthWatcher() { stop(); }

void SysfsHealthWatcher::stop() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(stop_fd_.get(), &one, sizeof(one));
    thread_.join();
  }
  inotify_fd_.reset();
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
  inotify_fd_.reset(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  stop_fd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!inotify_fd_.valid() || !stop_fd_.valid()) {
    spdlog::error("sysfs health: cannot create inotify/eventfd: {}", std::strerror(errno));
    stop();
    return;
  }
  size_t watched = 0;
  for (const auto& dir : dirs) {
    if (::inotify_add_watch(inotify_fd_.get(), dir.c_str(), IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_MOVED_TO) >= 0)
      ++watched;
    else
      spdlog::warn("sysfs health: cannot watch {}: {}; its devices are rechecked on reload only", dir,
                   std::strerror(errno));
  }
  spdlog::info("sysfs health: watching {} of {} device folders", watched, dirs.size());
  thread_ = std::thread([this] { run(); });
}

// The fds are opened before the thread starts and closed only after it is joined.
void SysfsHealthWatcher::run() {
  const int inotify_fd = inotify_fd_.get();
  while (true) {
    pollfd fds[2] = {{inotify_fd, POLLIN, 0}, {stop_fd_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents & POLLIN) return;
    if (!(fds[0].revents & POLLIN)) continue;
    alignas(inotify_event) char buffer[4096];
    while (::read(inotify_fd, buffer, sizeof(buffer)) > 0) {
    }
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

void LabelsWriter::on_plan(const Config& config, const Inventory& inventory, const ResourcePlan& plan) {
  path_ = config.gfd_output_file;
  keep_on_exit_ = config.keep_labels_on_exit;
  if (!config.labels_enabled) return;
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
  if (written_ && *written_ == labels) return;
  if (auto st = write_feature_file(path_, labels); !st) {
    spdlog::error("labels: {}", st.error().message);
    return;
  }
  spdlog::info("labels: wrote {} labels to {}", labels.size(), path_);
  written_ = std::move(labels);
}

void LabelsWriter::on_exit() {
  if (!written_) return;
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
  spdlog::info("cdi: wrote {}", *written);
  last_key_ = std::move(key);
}

}  // namespace kgpu::cli
