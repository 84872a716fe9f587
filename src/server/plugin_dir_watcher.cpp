#include "server/plugin_dir_watcher.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace kgpu::server {

DirChanges parse_inotify_events(const char* buffer, size_t length) {
  DirChanges changes;
  size_t offset = 0;
  while (offset + sizeof(inotify_event) <= length) {
    inotify_event ev;
    std::memcpy(&ev, buffer + offset, sizeof(ev));  // the buffer may not be aligned
    std::string name;
    if (ev.len > 0) name.assign(buffer + offset + sizeof(inotify_event), strnlen(buffer + offset + sizeof(inotify_event), ev.len));
    offset += sizeof(inotify_event) + ev.len;
    if (ev.mask & IN_Q_OVERFLOW) changes.overflow = true;
    if (ev.mask & (IN_DELETE_SELF | IN_MOVE_SELF | IN_IGNORED)) changes.directory_gone = true;
    if ((ev.mask & (IN_CREATE | IN_MOVED_TO)) && name == "kubelet.sock") changes.kubelet_socket_created = true;
    if ((ev.mask & (IN_DELETE | IN_MOVED_FROM)) && !name.empty()) changes.deleted.insert(name);
  }
  return changes;
}

Result<PluginDirWatcher> PluginDirWatcher::open(const std::string& dir) {
  auto channel = InotifyChannel::open();
  if (!channel) return channel.error();
  if (channel->add_watch(dir, IN_CREATE | IN_MOVED_TO | IN_DELETE | IN_MOVED_FROM | IN_DELETE_SELF | IN_MOVE_SELF) < 0)
    return Error::unavailable("cannot watch " + dir + ": " + std::strerror(errno));
  return PluginDirWatcher(std::move(*channel));
}

DirChanges PluginDirWatcher::read_changes() {
  DirChanges all;
  alignas(inotify_event) char buf[8192];
  while (true) {
    ssize_t n = ::read(channel_.fd(), buf, sizeof(buf));
    if (n <= 0) break;  // EAGAIN: drained
    DirChanges c = parse_inotify_events(buf, static_cast<size_t>(n));
    all.kubelet_socket_created |= c.kubelet_socket_created;
    all.directory_gone |= c.directory_gone;
    all.overflow |= c.overflow;
    all.deleted.insert(c.deleted.begin(), c.deleted.end());
  }
  return all;
}

}  // namespace kgpu::server
