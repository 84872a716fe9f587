#pragma once
// Watches the config file for changes with inotify, so an edited file or a ConfigMap update is
// applied without a SIGHUP. It watches the file's *directory*: editors replace files by rename and
// the kubelet updates a mounted ConfigMap by swapping the `..data` symlink in that directory, and
// neither would be seen by a watch on the file itself. The directory watch re-arms itself
// (core/dir_watch.h): a folder removed and created again, or one that appears only after start,
// is followed, and a queue overflow counts as "maybe changed". An event only counts when the
// file's content actually changed (the kubelet touches the directory for unrelated keys too).
// The content is read with the bounded, non-blocking read (core/safe_file.h): a FIFO, a device or
// a huge file at the path cannot stall or bloat the event loop; it reads as "unreadable", which
// the reload then reports as an error while the current plan stays.
#include <string>

#include "core/dir_watch.h"
#include "core/result.h"

namespace kgpu::server {

class ConfigFileWatcher {
 public:
  static Result<ConfigFileWatcher> open(const std::string& path);

  int fd() const { return watch_.fd(); }  // readable when events are pending (poll it)
  // Drains pending events; true when the file's content differs from what was last seen
  // (a file that vanished or became unreadable counts as changed once, so the reload reports it).
  bool changed();

 private:
  ConfigFileWatcher(DirWatch watch, std::string path, std::string content);
  DirWatch watch_;
  std::string path_;
  std::string last_content_;
};

}  // namespace kgpu::server
