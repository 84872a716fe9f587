#include "core/dir_watch.h"

#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <set>

namespace kgpu {
namespace {

// What an ancestor is watched for: the next folder on the way down appearing (created or moved in),
// and the ancestor itself going away.
constexpr uint32_t kAncestorMask = IN_CREATE | IN_MOVED_TO;
constexpr uint32_t kSelfMask = IN_DELETE_SELF | IN_MOVE_SELF | IN_ONLYDIR;

bool is_dir(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string parent_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == 0 || slash == std::string::npos ? "/" : path.substr(0, slash);
}

// `dir` itself when it is a folder, else its deepest ancestor that is ("/" at worst).
std::string deepest_existing(std::string dir) {
  while (dir != "/" && !is_dir(dir)) dir = parent_of(dir);
  return dir;
}

// The component of `dir` right below its ancestor `ancestor` ("/dev", "/dev/dri/by-path" -> "dri").
std::string next_component(const std::string& ancestor, const std::string& dir) {
  const size_t start = ancestor == "/" ? 1 : ancestor.size() + 1;
  if (dir.size() <= start || dir.compare(0, ancestor.size(), ancestor) != 0) return {};
  return dir.substr(start, dir.find('/', start) - start);
}

std::string normalise(const std::string& dir) {
  std::error_code ec;
  std::filesystem::path p = std::filesystem::absolute(dir.empty() ? "." : dir, ec);
  std::string out = (ec ? std::filesystem::path(dir) : p).lexically_normal().string();
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  return out;
}

}  // namespace

Result<DirWatch> DirWatch::open(const std::vector<std::string>& dirs, uint32_t mask) {
  auto channel = InotifyChannel::open();
  if (!channel) return channel.error();
  std::set<std::string> unique;
  for (const auto& d : dirs) unique.insert(normalise(d));
  std::vector<Target> targets;
  for (const auto& d : unique) targets.push_back({d, ""});
  DirWatch watch(std::move(*channel), std::move(targets), mask);
  watch.rearm();
  return watch;
}

DirWatch::DirWatch(InotifyChannel channel, std::vector<Target> targets, uint32_t mask)
    : channel_(std::move(channel)), targets_(std::move(targets)), mask_(mask) {}

bool DirWatch::wait_for_change(int stop_fd) {
  while (true) {
    pollfd fds[2] = {{fd(), POLLIN, 0}, {stop_fd, POLLIN, 0}};
    if (::poll(fds, 2, -1) < 0 && errno != EINTR) return false;
    if (fds[1].revents & POLLIN) return false;
    if ((fds[0].revents & POLLIN) && drain()) return true;
  }
}

size_t DirWatch::watched_directly() const {
  size_t n = 0;
  for (const auto& t : targets_) n += t.watched == t.dir;
  return n;
}

bool DirWatch::rearm_once() {
  bool changed = false;
  std::map<std::string, uint32_t> wanted;
  for (auto& t : targets_) {
    std::string at = deepest_existing(t.dir);
    changed |= at != t.watched;
    t.watched = at;
    wanted[at] |= at == t.dir ? mask_ : kAncestorMask;
  }
  std::map<int, std::string> now;
  for (const auto& [path, mask] : wanted) {
    // Replaces the mask when the folder is already watched (same wd).
    const int wd = channel_.add_watch(path, mask | kSelfMask);
    if (wd >= 0) {
      now[wd] = path;
      continue;
    }
    // Gone again since the stat (ENOENT/ENOTDIR): the next pass walks further up. Anything else
    // (EACCES, out of watches) leaves the folder unwatched; mark it so the caller rechecks.
    for (auto& t : targets_)
      if (t.watched == path) t.watched.clear();
    changed = true;
  }
  for (const auto& [wd, path] : watches_)
    if (!now.count(wd)) channel_.rm_watch(wd);
  watches_ = std::move(now);
  return changed;
}

bool DirWatch::rearm() {
  // Repeat until a pass changes nothing: a folder created between a pass's stat and its
  // inotify_add_watch on the ancestor produced no event, but the next pass's stat sees it.
  bool changed = false;
  for (int pass = 0; pass < 16; ++pass) {
    if (!rearm_once()) break;
    changed = true;
  }
  return changed;
}

bool DirWatch::drain() {
  bool changed = false, need_rearm = false;
  alignas(inotify_event) char buffer[16384];
  while (true) {
    const ssize_t n = ::read(channel_.fd(), buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;  // EAGAIN: drained
    for (ssize_t at = 0; at + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
      const auto* ev = reinterpret_cast<const inotify_event*>(buffer + at);
      at += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      if (ev->mask & IN_Q_OVERFLOW) {
        // Events were lost, a folder's IN_IGNORED among them perhaps: recheck everything.
        changed = need_rearm = true;
        continue;
      }
      if (ev->mask & (IN_IGNORED | IN_DELETE_SELF | IN_MOVE_SELF | IN_UNMOUNT)) need_rearm = true;
      auto it = watches_.find(ev->wd);
      if (it == watches_.end()) continue;  // a watch already replaced
      const std::string name = ev->len > 0 ? std::string(ev->name) : std::string();
      for (const auto& t : targets_) {
        if (t.watched != it->second) continue;
        if (t.watched == t.dir) changed = true;  // inside a watched folder
        else if (!name.empty() && name == next_component(t.watched, t.dir)) need_rearm = true;
      }
    }
  }
  if (need_rearm) changed |= rearm();
  return changed;
}

}  // namespace kgpu
