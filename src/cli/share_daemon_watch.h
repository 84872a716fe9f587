#pragma once
// The folders of the shared GPUs' MPS control daemons (<mpsRoot>/dra/gpushare-<uuid>), watched
// while shares of those GPUs are prepared. A daemon that dies (the kernel closes its supervisor's
// readiness marker), quits, or comes back changes something in its folder, and `on_change` runs on
// the watch's thread: the plugin plans again, and a GPU whose daemon is not ready is published with
// a taint until it is (issue 31). No timer: the thread sleeps in poll while nothing changes.
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/dir_watch.h"
#include "core/unique_fd.h"

namespace kgpu::cli {

class ShareDaemonWatch {
 public:
  explicit ShareDaemonWatch(std::function<void()> on_change) : on_change_(std::move(on_change)) {}
  ~ShareDaemonWatch();
  ShareDaemonWatch(const ShareDaemonWatch&) = delete;
  ShareDaemonWatch& operator=(const ShareDaemonWatch&) = delete;

  // Watches exactly `folders` from now on (none: the thread ends). The same set again is a no-op.
  // Called on the daemon's loop thread only.
  void watch(std::vector<std::string> folders);
  void stop();

 private:
  void run();

  std::function<void()> on_change_;
  std::vector<std::string> folders_;
  std::optional<DirWatch> watch_;  // used by the thread only while it runs
  UniqueFd stop_fd_;
  std::thread thread_;
};

}  // namespace kgpu::cli
