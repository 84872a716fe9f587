#pragma once
// Wakes a watcher thread that polls `stop_fd` (an eventfd) with its inotify descriptor, so stop()
// ends it at once; the plan observers with a thread of their own share it.
#include <unistd.h>

#include <cstdint>

namespace kgpu::cli {

inline void signal_stop(int stop_fd) {
  uint64_t one = 1;
  [[maybe_unused]] auto n = ::write(stop_fd, &one, sizeof(one));
}

}  // namespace kgpu::cli
