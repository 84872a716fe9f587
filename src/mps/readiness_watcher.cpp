#include "mps/readiness_watcher.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include <spdlog/spdlog.h>

#include "core/thread_name.h"
#include "mps/readiness.h"
#include "plan/mps_paths.h"

namespace kgpu {

MpsReadinessWatcher::~MpsReadinessWatcher() { stop(); }

void MpsReadinessWatcher::stop() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(stop_fd_.get(), &one, sizeof(one));
    thread_.join();
  }
  inotify_.reset();
  stop_fd_.reset();
}

void MpsReadinessWatcher::on_plan(const Config& config, const ResourcePlan& plan) {
  std::vector<std::string> markers;
  for (const auto& r : plan.resources)
    if (r.sharing == SharingKind::Mps) markers.push_back(mps_ready_marker(config.mps_root, r.name));
  // The same markers stay watched until an event; then they are watched again by path, since the
  // inode behind a path may have changed.
  if (markers == markers_ && !rearm_ && (thread_.joinable() || markers.empty())) return;
  stop();
  rearm_ = false;
  markers_ = markers;
  if (markers.empty()) return;
  auto channel = InotifyChannel::open();
  if (channel) inotify_.emplace(std::move(*channel));
  stop_fd_.reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!inotify_ || !stop_fd_.valid()) {
    spdlog::error("mps: cannot watch the readiness markers: {}",
                  channel ? std::string(std::strerror(errno)) : channel.error().message);
    stop();
    return;
  }
  bool gone = false;
  for (const auto& m : markers) {
    if (inotify_->add_watch(m,
                            IN_CLOSE_WRITE | IN_DELETE_SELF | IN_MOVE_SELF | IN_DONT_FOLLOW) < 0) {
      // Gone between the readiness check and now: re-plan at once.
      spdlog::info("mps: readiness marker {} vanished: {}", m, std::strerror(errno));
      gone = true;
    } else if (!mps_marker_live(m)) {
      // Released between the readiness check and the watch (a supervisor killed then): its close
      // came before the watch could see it, so look once more now that the watch is armed.
      spdlog::info("mps: readiness marker {} was released before it was watched", m);
      gone = true;
    }
  }
  thread_ = std::thread([this] {
    name_this_thread("kgpu-mps-ready");  // inotify on the MPS pipe folders
    run();
  });
  if (gone) {
    rearm_ = true;  // the next plan watches the markers again, whatever inode they have then
    on_change_();
  }
}

// The fds are opened before the thread starts and closed only after it is joined.
void MpsReadinessWatcher::run() {
  const int inotify_fd = inotify_->fd();
  while (true) {
    pollfd fds[2] = {{inotify_fd, POLLIN, 0}, {stop_fd_.get(), POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return;
    if (fds[1].revents & POLLIN) return;
    if (!(fds[0].revents & POLLIN)) continue;
    alignas(inotify_event) char buffer[4096];
    while (::read(inotify_fd, buffer, sizeof(buffer)) > 0) {
    }
    spdlog::info("mps: a readiness marker was released (supervisor stopped or died); re-checking MPS resources");
    rearm_ = true;
    on_change_();
  }
}

}  // namespace kgpu
