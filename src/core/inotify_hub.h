#pragma once
// One inotify instance for the whole process, shared by every long-lived watch (the device-plugin
// folder, the config file's folder, the labels folder, sysfs health, the MPS daemons' folders,
// driver discovery). Why (issue 40, item 2): releasing an inotify instance that holds watches
// waits for an fsnotify SRCU grace period, whether by close() or by the process exit, one grace
// period per instance, and those are slow (several ms each, 8-16 ms on a busy 2-core node) while
// another fsnotify user, the kubelet watching the same device-plugin folder, is active. With one
// instance per watcher kgpu's SIGTERM -> exit paid one per watcher; with one shared instance it
// pays at most one, at the process exit. The hub's instance is never closed: it lives as long as
// the process (the exit releases it), so no stop path waits on it, and a watcher that stops only
// removes its watches (inotify_rm_watch does not wait). It also keeps kgpu at one of the node's
// fs.inotify.max_user_instances (128 by default, shared with the kubelet and everything else).
//
// A watcher holds an InotifyChannel instead of an inotify fd. Its fd() reads like one: whole
// struct inotify_event records (each read returns one packet of at most 4,096 bytes; read with a
// buffer of at least that), non-blocking, readable when events are pending; its watch descriptors
// are the instance's. A thread of the hub reads the instance and hands each event to the channels
// whose watch asked for it (two channels watching one folder share the kernel's watch: the
// kernel's mask is the union, each channel gets what its own mask asks for). IN_IGNORED (the
// folder is gone) goes to every channel watching it; IN_Q_OVERFLOW to every channel. A channel
// that does not read fast enough to keep up loses events as an inotify queue does: it gets one
// IN_Q_OVERFLOW (wd -1) once it has room again.
#include <cstdint>
#include <string>

#include "core/result.h"
#include "core/unique_fd.h"

namespace kgpu {

class InotifyChannel {
 public:
  // A channel of the process's hub (created, with its thread, on first use). Fails when inotify
  // or a pipe is unavailable.
  static Result<InotifyChannel> open();

  InotifyChannel(InotifyChannel&& other) noexcept;
  InotifyChannel& operator=(InotifyChannel&& other) noexcept;
  InotifyChannel(const InotifyChannel&) = delete;
  InotifyChannel& operator=(const InotifyChannel&) = delete;
  ~InotifyChannel();  // removes its watches (those no other channel shares)

  int fd() const { return read_end_.get(); }
  // As inotify_add_watch(2) on this channel: the watch descriptor, or -1 with errno set. Adding a
  // path watched already by this channel replaces this channel's mask for it.
  int add_watch(const std::string& path, uint32_t mask);
  // As inotify_rm_watch(2) for this channel (the kernel's watch goes once no channel has it).
  void rm_watch(int wd);

  // For the process's exit path: removes every watch of every channel open now (those channels
  // get no event again, and their add_watch fails with ESHUTDOWN; channels opened later work), then
  // waits for the kernel to release them, here rather than in the exit. That one wait is an
  // fsnotify grace period, expedited (microseconds) while the node's fsnotify is idle, so the
  // caller makes it before anything it does sets other watchers in motion (removing the sockets
  // the kubelet watches): the exit then has no watch left to release (issue 40, item 2).
  static void release_all();

 private:
  InotifyChannel(uint64_t id, UniqueFd read_end) : id_(id), read_end_(std::move(read_end)) {}
  void close();
  uint64_t id_ = 0;  // 0: moved from
  UniqueFd read_end_;
};

// The mask a channel asked for lets `event_mask` through (pure; for tests): an event it asked for,
// or what every watcher of an inotify instance gets (IN_IGNORED, IN_Q_OVERFLOW, IN_UNMOUNT).
bool inotify_channel_wants(uint32_t channel_mask, uint32_t event_mask);

}  // namespace kgpu
