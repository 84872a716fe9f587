#include "cli/sysfs_health_watcher.h"

#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <spdlog/spdlog.h>

#include "cli/stop_signal.h"
#include "core/thread_name.h"
#include "sysfs/backends.h"

namespace kgpu::cli {

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

}  // namespace kgpu::cli
