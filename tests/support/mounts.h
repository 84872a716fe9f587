#pragma once
// Mounts in tests: a DRA MPS claim's shared memory is a tmpfs that `kgpu mps-daemon` mounts under
// the test's folder (and keeps while the claim is prepared, across supervisor restarts), so a
// test's folder may hold mount points when it is removed; and whether this machine lets a process
// mount at all (CAP_SYS_ADMIN), which those tests need.
#include <sched.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace kgpu::test {

// A mount point as /proc/self/mountinfo writes it ("\040" for a space, ...) decoded.
inline std::string decode_mountinfo_path(const std::string& field) {
  std::string out;
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      out += static_cast<char>(std::strtol(field.substr(i + 1, 3).c_str(), nullptr, 8));
      i += 3;
    } else {
      out += field[i];
    }
  }
  return out;
}

// Every mount point at or under `folder`, deepest first.
inline std::vector<std::string> mounts_under(const std::string& folder) {
  std::vector<std::string> found;
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string id, parent, devices, root, mount_point;
    fields >> id >> parent >> devices >> root >> mount_point;
    const std::string path = decode_mountinfo_path(mount_point);
    if (path == folder || path.starts_with(folder + "/")) found.push_back(path);
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  return found;
}

// Unmounts (lazily) everything mounted at or under `folder`, so removing it cannot fail on a busy mount.
inline void unmount_all_under(const std::string& folder) {
  for (const auto& path : mounts_under(folder)) ::umount2(path.c_str(), MNT_DETACH);
}

// True when this process may make a mount namespace and mount a tmpfs in it: probed once, in a
// child, so nothing of the probe stays.
inline bool can_mount_tmpfs() {
  static const bool allowed = [] {
    const pid_t pid = ::fork();
    if (pid == 0) {
      const bool ok = ::unshare(CLONE_NEWNS) == 0 && ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0 &&
                      ::mount("probe", "/tmp", "tmpfs", 0, "size=1m") == 0;
      ::_exit(ok ? 0 : 1);
    }
    int status = 0;
    return pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  }();
  return allowed;
}

inline constexpr const char* kNoMountsReason =
    "a DRA MPS claim's daemon gets its own /dev/shm tmpfs, and this machine does not let a process mount one "
    "(no CAP_SYS_ADMIN)";

}  // namespace kgpu::test
