#include "nvml/discovery_loop.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <thread>

#include <spdlog/spdlog.h>

#include "core/inotify_hub.h"
#include "core/thread_name.h"
#include "nvml/backoff.h"

namespace kgpu {

Result<NvidiaDiscovery> load_and_discover(const std::string& driver_root, const NvidiaDiscoveryOptions& options) {
  auto nvml = NvmlLibrary::load(driver_root);
  if (!nvml) return nvml.error();
  auto inventory = discover_nvidia(**nvml, options);
  if (!inventory) return inventory.error();
  return NvidiaDiscovery{std::move(*nvml), std::move(*inventory)};
}

struct NvidiaDiscoveryLoop::State {
  DiscoveryLoopOptions options;
  Callback on_found;
  int wake_fd = -1;     // eventfd: stop() and retry_now()
  std::optional<InotifyChannel> inotify;  // device nodes / driver libraries appearing
  std::atomic<bool> stopping{false};
  std::atomic<int> attempts{0};
  mutable std::mutex mu;
  std::string last_error;
  std::thread thread;

  ~State() {
    if (wake_fd >= 0) ::close(wake_fd);
  }

  void add_watches() {
    auto channel = InotifyChannel::open();
    if (!channel) return;  // only a faster wake-up is lost; backoff still retries
    inotify.emplace(std::move(*channel));
    std::string dev_root = options.discovery.dev_root.empty() ? "/" : options.discovery.dev_root;
    std::vector<std::string> dirs = {(dev_root == "/" ? std::string() : dev_root) + "/dev"};
    for (const auto& candidate : NvmlLibrary::candidate_paths(options.driver_root))
      dirs.push_back(candidate.substr(0, candidate.rfind('/')));
    for (const auto& d : dirs)
      static_cast<void>(inotify->add_watch(d, IN_CREATE | IN_MOVED_TO | IN_ATTRIB));
  }

  void drain(int fd) {
    char buf[4096];
    while (::read(fd, buf, sizeof buf) > 0) {
    }
  }

  // Waits for the delay, a wake-up or a relevant file appearing; false when stopping.
  bool wait(std::chrono::milliseconds delay) {
    pollfd fds[2] = {{wake_fd, POLLIN, 0}, {inotify ? inotify->fd() : -1, POLLIN, 0}};
    int n = inotify ? 2 : 1;
    int rc = ::poll(fds, static_cast<nfds_t>(n), static_cast<int>(delay.count()));
    if (rc > 0) {
      if (fds[0].revents & POLLIN) drain(wake_fd);
      if (n == 2 && (fds[1].revents & POLLIN)) drain(inotify->fd());
    }
    return !stopping.load();
  }

  void run() {
    Backoff backoff(options.initial_backoff, options.max_backoff);
    while (!stopping.load()) {
      ++attempts;
      auto found = load_and_discover(options.driver_root, options.discovery);
      if (found) {
        spdlog::info("nvidia: found {} GPU(s) after {} attempt(s)", found->inventory.gpus.size(), attempts.load());
        if (!stopping.load()) on_found(std::move(*found));
        return;
      }
      {
        std::lock_guard lock(mu);
        if (found.error().message != last_error) {
          // Once per change of cause, not once per try.
          spdlog::warn("nvidia: no usable NVML yet ({}); retrying with backoff", found.error().message);
          last_error = found.error().message;
        }
      }
      if (!wait(backoff.next())) return;
    }
  }
};

NvidiaDiscoveryLoop::NvidiaDiscoveryLoop(DiscoveryLoopOptions options, Callback on_found)
    : state_(std::make_shared<State>()) {
  state_->options = std::move(options);
  state_->on_found = std::move(on_found);
}

NvidiaDiscoveryLoop::~NvidiaDiscoveryLoop() { stop(); }

Status NvidiaDiscoveryLoop::start() {
  State& s = *state_;
  if (s.thread.joinable()) return Error::precondition("discovery loop already started");
  s.wake_fd = ::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (s.wake_fd < 0) return Error::internal(std::string("eventfd: ") + std::strerror(errno));
  s.add_watches();
  auto shared = state_;
  s.thread = std::thread([shared] {
    name_this_thread("kgpu-discovery");  // NVML discovery retries while the driver is not up
    shared->run();
  });
  return ok_status();
}

void NvidiaDiscoveryLoop::stop() {
  state_->stopping = true;
  retry_now();
  if (state_->thread.joinable()) {
    if (state_->thread.get_id() == std::this_thread::get_id()) {
      state_->thread.detach();  // stopped from inside the callback
    } else {
      state_->thread.join();
    }
  }
}

void NvidiaDiscoveryLoop::retry_now() {
  if (state_->wake_fd < 0) return;
  uint64_t one = 1;
  static_cast<void>(::write(state_->wake_fd, &one, sizeof one));
}

int NvidiaDiscoveryLoop::attempts() const { return state_->attempts.load(); }

std::string NvidiaDiscoveryLoop::last_error() const {
  std::lock_guard lock(state_->mu);
  return state_->last_error;
}

}  // namespace kgpu
