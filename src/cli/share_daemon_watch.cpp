#include "cli/share_daemon_watch.h"

#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "core/thread_name.h"

namespace kgpu::cli {

ShareDaemonWatch::~ShareDaemonWatch() { stop(); }

void ShareDaemonWatch::stop() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(stop_fd_.get(), &one, sizeof(one));
    thread_.join();
  }
  watch_.reset();
  stop_fd_.reset();
  folders_.clear();
}

void ShareDaemonWatch::watch(std::vector<std::string> folders) {
  if (folders == folders_ && (thread_.joinable() || folders.empty())) return;
  stop();
  if (folders.empty()) return;
  // The marker's close (a dead supervisor), the folder's files replaced or removed: all inside it.
  auto watch = DirWatch::open(folders, IN_CLOSE_WRITE | IN_CREATE | IN_DELETE | IN_MOVED_TO | IN_MOVED_FROM);
  stop_fd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!watch || !stop_fd_.valid()) {
    // Without the watch a dead daemon is noticed at the next plan (a prepare, a health event).
    spdlog::error("DRA memory shares: cannot watch the shared GPUs' MPS daemons ({})",
                  watch ? "no eventfd" : watch.error().message);
    stop_fd_.reset();
    return;
  }
  folders_ = std::move(folders);
  watch_.emplace(std::move(*watch));
  thread_ = std::thread([this] {
    name_this_thread("kgpu-share-mps");  // inotify on the shared GPUs' MPS daemon folders
    run();
  });
}

void ShareDaemonWatch::run() {
  while (watch_->wait_for_change(stop_fd_.get())) on_change_();
}

}  // namespace kgpu::cli
