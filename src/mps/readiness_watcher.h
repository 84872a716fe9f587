#pragma once
// The plugin's watch on the readiness markers of the MPS resources it advertises. A marker stops
// counting when its supervisor releases it: removed at a clean stop, or its flock dropped when the
// supervisor dies (even by SIGKILL, when the kernel closes the supervisor's write fd: inotify reports
// that as IN_CLOSE_WRITE on the marker). Either way `on_change` runs (on the watcher's thread), and
// the plugin re-plans, which withholds the resource again (mps_ready). No timer: an idle node causes
// no wake-ups.
#include <atomic>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "config/config.h"
#include "core/resource_plan.h"
#include "core/inotify_hub.h"
#include "core/unique_fd.h"

namespace kgpu {

class MpsReadinessWatcher {
 public:
  explicit MpsReadinessWatcher(std::function<void()> on_change) : on_change_(std::move(on_change)) {}
  ~MpsReadinessWatcher();
  MpsReadinessWatcher(const MpsReadinessWatcher&) = delete;
  MpsReadinessWatcher& operator=(const MpsReadinessWatcher&) = delete;

  // Watches the markers of the MPS resources `plan` advertises (a plan with the unready ones
  // already withheld); nothing when there are none.
  void on_plan(const Config& config, const ResourcePlan& plan);

 private:
  void stop();
  void run();

  std::function<void()> on_change_;
  std::vector<std::string> markers_;
  // Set by the thread on an event: the watched inode may be gone or replaced (a supervisor that
  // restarted at once renames a new marker into place), so the next on_plan re-arms.
  std::atomic<bool> rearm_{false};
  std::thread thread_;
  std::optional<InotifyChannel> inotify_;  // the process's one inotify instance (core/inotify_hub.h)
  UniqueFd stop_fd_;
};

}  // namespace kgpu
