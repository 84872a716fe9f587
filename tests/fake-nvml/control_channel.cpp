#include "control_channel.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

namespace kgpu::fake_nvml {

ControlChannel::ControlChannel(std::string path) : path_(std::move(path)) {
  int fd = ::open(path_.c_str(), O_RDONLY | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    std::fprintf(stderr, "fake-nvml: cannot open control file %s\n", path_.c_str());
    return;
  }
  ::close(fd);
  inotify_fd_ = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  if (inotify_fd_ >= 0 && ::inotify_add_watch(inotify_fd_, path_.c_str(), IN_MODIFY | IN_CLOSE_WRITE) < 0) {
    ::close(inotify_fd_);
    inotify_fd_ = -1;
  }
  stop_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (!ok()) std::fprintf(stderr, "fake-nvml: cannot watch control file %s\n", path_.c_str());
}

ControlChannel::~ControlChannel() {
  if (thread_.joinable()) {
    std::uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(stop_fd_, &one, sizeof one);
    thread_.join();
  }
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
  if (stop_fd_ >= 0) ::close(stop_fd_);
}

std::vector<std::string> ControlChannel::read_new_lines() {
  std::vector<std::string> lines;
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return lines;
  struct stat st {};
  if (::fstat(fd, &st) == 0 && st.st_size < offset_) {
    // The file was truncated or replaced: start over.
    offset_ = 0;
    partial_.clear();
  }
  char buf[4096];
  for (;;) {
    ssize_t n = ::pread(fd, buf, sizeof buf, offset_);
    if (n <= 0) break;
    offset_ += n;
    partial_.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  size_t start = 0;
  for (size_t nl = partial_.find('\n'); nl != std::string::npos; nl = partial_.find('\n', start)) {
    lines.push_back(partial_.substr(start, nl - start));
    start = nl + 1;
  }
  partial_.erase(0, start);
  return lines;
}

void ControlChannel::start(std::function<void(const std::vector<std::string>&)> on_lines) {
  if (!ok()) return;
  on_lines_ = std::move(on_lines);
  thread_ = std::thread([this] { run(); });
}

void ControlChannel::run() {
  // Signals belong to the host process's own threads, never to this one.
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, nullptr);
  pollfd fds[2] = {{inotify_fd_, POLLIN, 0}, {stop_fd_, POLLIN, 0}};
  for (;;) {
    if (::poll(fds, 2, -1) < 0) continue;  // EINTR
    if (fds[1].revents != 0) return;
    if (fds[0].revents != 0) {
      alignas(inotify_event) char events[4096];
      while (::read(inotify_fd_, events, sizeof events) > 0) {
      }
      auto lines = read_new_lines();
      if (!lines.empty()) on_lines_(lines);
    }
  }
}

}  // namespace kgpu::fake_nvml
