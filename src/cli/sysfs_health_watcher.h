#pragma once
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "core/dir_watch.h"
#include "core/inventory.h"
#include "core/unique_fd.h"
#include "core/resource_plan.h"
#include "server/daemon.h"

namespace kgpu::cli {

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

}  // namespace kgpu::cli
