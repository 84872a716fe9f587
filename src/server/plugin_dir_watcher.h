#pragma once
// Watches the device-plugin directory with inotify, so a kubelet restart (it deletes every socket
// there and recreates kubelet.sock) is seen within microseconds, with no polling.
#include <set>
#include <string>

#include "core/result.h"
#include "core/inotify_hub.h"

namespace kgpu::server {

struct DirChanges {
  bool kubelet_socket_created = false;       // kubelet.sock created or moved in
  std::set<std::string> deleted;              // names deleted or moved away
  bool directory_gone = false;                // the watched directory itself was removed
  bool overflow = false;                      // events lost: re-check everything
  bool empty() const { return !kubelet_socket_created && deleted.empty() && !directory_gone && !overflow; }
};

// Decodes a buffer of struct inotify_event records. Pure (no I/O), for tests.
DirChanges parse_inotify_events(const char* buffer, size_t length);

class PluginDirWatcher {
 public:
  static Result<PluginDirWatcher> open(const std::string& dir);

  int fd() const { return channel_.fd(); }  // readable when events are pending (poll it)
  DirChanges read_changes();      // drains every pending event; never blocks

 private:
  explicit PluginDirWatcher(InotifyChannel channel) : channel_(std::move(channel)) {}
  InotifyChannel channel_;  // the process's one inotify instance (core/inotify_hub.h): no wait at exit
};

}  // namespace kgpu::server
