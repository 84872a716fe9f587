#pragma once
// Watches the config file for changes with inotify, so an edited file or a ConfigMap update is
// applied without a SIGHUP. It watches the file's *directory*: editors replace files by rename and
// the kubelet updates a mounted ConfigMap by swapping the `..data` symlink in that directory, and
// neither would be seen by a watch on the file itself. An event only counts when the file's content
// actually changed (the kubelet touches the directory for unrelated keys too).
#include <string>

#include "core/result.h"
#include "core/unique_fd.h"

namespace kgpu::server {

class ConfigFileWatcher {
 public:
  static Result<ConfigFileWatcher> open(const std::string& path);

  int fd() const { return fd_.get(); }  // readable when events are pending (poll it)
  // Drains pending events; true when the file's content differs from what was last seen
  // (a file that vanished counts as changed once, so the reload reports it).
  bool changed();

 private:
  ConfigFileWatcher(int fd, std::string path, std::string content);
  UniqueFd fd_;
  std::string path_;
  std::string last_content_;
};

}  // namespace kgpu::server
