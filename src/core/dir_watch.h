#pragma once
// Watching folders with inotify in a way that survives the folders themselves: a watch dies with
// its folder (IN_IGNORED), and a folder that does not exist yet cannot be watched at all. DirWatch
// watches each folder that exists, and the deepest existing ancestor of each one that does not, and
// moves the watches as folders vanish and appear (devtmpfs removes an empty /dev/dri when a driver
// unloads; an operator recreates a config folder; the NFD features.d folder appears after kgpu
// starts). A queue overflow re-arms every watch. No timers: the fd is readable only on events.
//
// Use: poll fd() for POLLIN, then call drain(); when it returns true, re-read whatever the watched
// folders hold (events are a hint, the file system is the truth: events may have been lost in an
// overflow, or have happened while a folder was being re-watched).
// The watches are on the process's shared inotify instance (core/inotify_hub.h): opening or ending
// a DirWatch never waits on the kernel.
#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/inotify_hub.h"

namespace kgpu {

class DirWatch {
 public:
  // `dirs`: the folders (relative ones are taken from the current directory); `mask`: the inotify
  // events wanted inside them (IN_CREATE, IN_DELETE, IN_CLOSE_WRITE, ...). Fails only when inotify
  // itself is unavailable.
  static Result<DirWatch> open(const std::vector<std::string>& dirs, uint32_t mask);

  int fd() const { return channel_.fd(); }

  // Reads every pending event without blocking and re-arms the watches. True when something in the
  // folders may have changed: an event inside one, a folder appearing or vanishing, or an overflow.
  // Events in an ancestor that do not concern the path to a folder are ignored (false).
  bool drain();

  // Blocks until `stop_fd` (an eventfd) is readable (false) or the folders may have changed (true,
  // as drain() says). For a watcher thread's loop: `while (watch.wait_for_change(stop)) react();`.
  bool wait_for_change(int stop_fd);

  // How many of the folders exist and are watched themselves (not through an ancestor).
  size_t watched_directly() const;

 private:
  struct Target {
    std::string dir;      // absolute, no trailing slash
    std::string watched;  // dir, or its deepest existing ancestor
  };
  DirWatch(InotifyChannel channel, std::vector<Target> targets, uint32_t mask);
  // Points every watch at the deepest existing folder; true when any target's watched folder changed.
  bool rearm();
  bool rearm_once();

  InotifyChannel channel_;  // of the process's one inotify instance (core/inotify_hub.h)
  std::vector<Target> targets_;
  uint32_t mask_;
  std::map<int, std::string> watches_;  // wd -> watched path
};

}  // namespace kgpu
