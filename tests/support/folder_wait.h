#pragma once
// For tests that wait on files a process or thread writes: re-checks `cond` each time something
// changes in one of `folders` (inotify: created, written, moved, deleted), until it holds or
// `limit` passes. Missing folders are created first, so they can be watched before anything is
// written there. No sleeps: the deadline only bounds the test.
#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <functional>
#include <vector>

namespace kgpu::test {

inline bool wait_in_folders(const std::vector<std::filesystem::path>& folders, const std::function<bool()>& cond,
                            std::chrono::milliseconds limit = std::chrono::seconds(10)) {
  const int fd = ::inotify_init1(IN_CLOEXEC | IN_NONBLOCK);
  for (const auto& folder : folders) {
    std::filesystem::create_directories(folder);
    ::inotify_add_watch(fd, folder.c_str(),
                        IN_CREATE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_TO | IN_DELETE | IN_DELETE_SELF);
  }
  const auto deadline = std::chrono::steady_clock::now() + limit;
  bool ok = cond();
  while (!ok) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left.count())) > 0) {
      char buf[4096];
      while (::read(fd, buf, sizeof buf) > 0) {
      }
    }
    ok = cond();
  }
  ::close(fd);
  return ok;
}

}  // namespace kgpu::test
