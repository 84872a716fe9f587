#include "core/inotify_hub.h"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "core/thread_name.h"

namespace kgpu {

bool inotify_channel_wants(uint32_t channel_mask, uint32_t event_mask) {
  if (event_mask & (IN_IGNORED | IN_Q_OVERFLOW | IN_UNMOUNT)) return true;
  return (event_mask & channel_mask & IN_ALL_EVENTS) != 0;
}

namespace {

// A packet of the channels' pipes: one read() returns one (pipe2 O_DIRECT), never a record cut in two.
constexpr size_t kPacket = 4096;

class Hub {
 public:
  // The process's hub, created on first use; nullptr (errno set) when inotify is unavailable.
  static Hub* instance() {
    static Hub* hub = create();  // never destroyed: the process exit releases the instance (see the header)
    return hub;
  }

  Result<std::pair<uint64_t, UniqueFd>> open_channel() {
    int ends[2];
    if (::pipe2(ends, O_DIRECT | O_NONBLOCK | O_CLOEXEC) != 0)
      return Error::unavailable(std::string("pipe2: ") + std::strerror(errno));
    UniqueFd read_end(ends[0]), write_end(ends[1]);
    std::lock_guard lock(mu_);
    const uint64_t id = next_id_++;
    channels_[id].write_end = std::move(write_end);
    return std::make_pair(id, std::move(read_end));
  }

  int add_watch(uint64_t id, const std::string& path, uint32_t mask) {
    std::lock_guard lock(mu_);
    if (id < first_live_) {  // released (release_all)
      errno = ESHUTDOWN;
      return -1;
    }
    // IN_MASK_ADD: the kernel's watch of this inode keeps what other channels asked for.
    const int wd = ::inotify_add_watch(fd_.get(), path.c_str(), (mask & ~IN_MASK_CREATE) | IN_MASK_ADD);
    if (wd < 0) return -1;
    watches_[wd][id] = mask;
    channels_[id].wds.insert(wd);
    return wd;
  }

  void rm_watch(uint64_t id, int wd) {
    std::lock_guard lock(mu_);
    unsubscribe_locked(id, wd);
    if (auto c = channels_.find(id); c != channels_.end()) c->second.wds.erase(wd);
  }

  void release_all() {
    {
      std::lock_guard lock(mu_);
      for (const auto& [wd, subscribers] : watches_) ::inotify_rm_watch(fd_.get(), wd);
      watches_.clear();
      for (auto& [id, c] : channels_) {
        c.wds.clear();
        c.overflowed = false;
        c.packet.clear();
      }
      first_live_ = next_id_;
    }
    // inotify_rm_watch only queues the marks' release; closing an inotify instance waits for every
    // release queued (fsnotify_wait_marks_destroyed), so a throwaway one makes that wait now.
    UniqueFd flush(::inotify_init1(IN_CLOEXEC));
  }

  void close_channel(uint64_t id) {
    std::lock_guard lock(mu_);
    auto c = channels_.find(id);
    if (c == channels_.end()) return;
    for (int wd : c->second.wds) unsubscribe_locked(id, wd);
    channels_.erase(c);  // closes the write end before the caller closes the read end: no SIGPIPE
    wake();              // a channel waiting for room is gone
  }

 private:
  struct Channel {
    UniqueFd write_end;
    std::set<int> wds;
    bool overflowed = false;  // events were dropped: an IN_Q_OVERFLOW is owed once there is room
    std::string packet;       // being filled by dispatch()
  };

  static Hub* create() {
    UniqueFd fd(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
    UniqueFd wake(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
    if (!fd.valid() || !wake.valid()) return nullptr;
    auto* hub = new Hub(std::move(fd), std::move(wake));
    // Every signal blocked in the thread, whenever it is created: the daemon takes SIGTERM through
    // its signalfd, which works only while no thread lets the signal through.
    sigset_t all, before;
    ::sigfillset(&all);
    ::pthread_sigmask(SIG_BLOCK, &all, &before);
    bool started = true;
    try {
      std::thread([hub] {
        name_this_thread("kgpu-inotify");  // hands the shared inotify instance's events to the watchers
        hub->run();
      }).detach();
    } catch (const std::exception&) {
      started = false;
    }
    ::pthread_sigmask(SIG_SETMASK, &before, nullptr);
    if (started) return hub;
    delete hub;
    errno = EAGAIN;
    return nullptr;
  }

  Hub(UniqueFd fd, UniqueFd wake) : fd_(std::move(fd)), wake_(std::move(wake)) {}

  void wake() {
    const uint64_t one = 1;
    [[maybe_unused]] auto n = ::write(wake_.get(), &one, sizeof one);
  }

  void unsubscribe_locked(uint64_t id, int wd) {
    auto w = watches_.find(wd);
    if (w == watches_.end()) return;
    w->second.erase(id);
    if (!w->second.empty()) return;  // still another channel's: its wider kernel mask is filtered
    ::inotify_rm_watch(fd_.get(), wd);  // queues the mark's release; does not wait for it
    watches_.erase(w);
  }

  void run() {
    alignas(inotify_event) char buffer[16384];
    for (;;) {
      try {
        std::vector<pollfd> fds = {{fd_.get(), POLLIN, 0}, {wake_.get(), POLLIN, 0}};
        {
          std::lock_guard lock(mu_);
          for (const auto& [id, c] : channels_)
            if (c.overflowed) fds.push_back({c.write_end.get(), POLLOUT, 0});
        }
        if (::poll(fds.data(), fds.size(), -1) < 0) continue;  // EINTR
        if (fds[1].revents & POLLIN) {
          uint64_t n = 0;
          [[maybe_unused]] auto r = ::read(wake_.get(), &n, sizeof n);
        }
        std::lock_guard lock(mu_);
        owe_overflows_locked();
        if (!(fds[0].revents & POLLIN)) continue;
        for (;;) {
          const ssize_t n = ::read(fd_.get(), buffer, sizeof buffer);
          if (n <= 0) break;  // EAGAIN: drained
          dispatch_locked(buffer, static_cast<size_t>(n));
        }
      } catch (...) {
        // Out of memory: the events of this round are lost; tell every channel so.
        std::lock_guard lock(mu_);
        for (auto& [id, c] : channels_) c.overflowed = id >= first_live_;
      }
    }
  }

  void dispatch_locked(const char* buffer, size_t length) {
    for (size_t at = 0; at + sizeof(inotify_event) <= length;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buffer + at);
      const size_t size = sizeof(inotify_event) + ev->len;
      if (at + size > length) break;
      const std::string_view record(buffer + at, size);
      at += size;
      if (ev->mask & IN_Q_OVERFLOW) {
        for (auto& [id, c] : channels_)
          if (id >= first_live_) add_locked(c, record);
        continue;
      }
      auto w = watches_.find(ev->wd);
      if (w == watches_.end()) continue;  // removed by every channel since
      for (const auto& [id, mask] : w->second)
        if (auto c = channels_.find(id); c != channels_.end() && inotify_channel_wants(mask, ev->mask))
          add_locked(c->second, record);
      if (ev->mask & IN_IGNORED) {  // the kernel dropped the watch (its inode is gone)
        for (const auto& [id, mask] : w->second)
          if (auto c = channels_.find(id); c != channels_.end()) c->second.wds.erase(ev->wd);
        watches_.erase(w);
      }
    }
    for (auto& [id, c] : channels_) flush_locked(c);
  }

  void add_locked(Channel& c, std::string_view record) {
    if (c.packet.size() + record.size() > kPacket) flush_locked(c);
    c.packet.append(record);
  }

  void flush_locked(Channel& c) {
    if (c.packet.empty()) return;
    if (!c.overflowed && ::write(c.write_end.get(), c.packet.data(), c.packet.size()) < 0) c.overflowed = true;
    c.packet.clear();
    if (c.overflowed) wake();  // poll for room in its pipe from now on
  }

  void owe_overflows_locked() {
    inotify_event overflow{};
    overflow.wd = -1;
    overflow.mask = IN_Q_OVERFLOW;
    for (auto& [id, c] : channels_)
      if (c.overflowed && ::write(c.write_end.get(), &overflow, sizeof overflow) == sizeof overflow)
        c.overflowed = false;
  }

  const UniqueFd fd_, wake_;
  std::mutex mu_;
  uint64_t next_id_ = 1;
  uint64_t first_live_ = 0;  // channels below this id were released (release_all)
  std::map<uint64_t, Channel> channels_;
  std::map<int, std::map<uint64_t, uint32_t>> watches_;  // wd -> channel -> the mask it asked for
};

}  // namespace

Result<InotifyChannel> InotifyChannel::open() {
  Hub* hub = Hub::instance();
  if (!hub) return Error::unavailable(std::string("inotify: ") + std::strerror(errno));
  auto channel = hub->open_channel();
  if (!channel) return channel.error();
  return InotifyChannel(channel->first, std::move(channel->second));
}

InotifyChannel::InotifyChannel(InotifyChannel&& other) noexcept
    : id_(std::exchange(other.id_, 0)), read_end_(std::move(other.read_end_)) {}

InotifyChannel& InotifyChannel::operator=(InotifyChannel&& other) noexcept {
  if (this != &other) {
    close();
    id_ = std::exchange(other.id_, 0);
    read_end_ = std::move(other.read_end_);
  }
  return *this;
}

InotifyChannel::~InotifyChannel() { close(); }

void InotifyChannel::close() {
  if (id_ != 0) Hub::instance()->close_channel(id_);
  id_ = 0;
  read_end_.reset();
}

int InotifyChannel::add_watch(const std::string& path, uint32_t mask) {
  if (id_ == 0) {
    errno = EBADF;
    return -1;
  }
  return Hub::instance()->add_watch(id_, path, mask);
}

void InotifyChannel::release_all() {
  if (Hub* hub = Hub::instance()) hub->release_all();
}

void InotifyChannel::rm_watch(int wd) {
  if (id_ != 0) Hub::instance()->rm_watch(id_, wd);
}

}  // namespace kgpu
