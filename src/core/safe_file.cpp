#include "core/safe_file.h"

#include <fcntl.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <ctime>

#include "core/unique_fd.h"

namespace kgpu {
namespace {

std::string errno_text(int err) { return std::strerror(err); }

const char* kind_of(mode_t mode) {
  if (S_ISDIR(mode)) return "a directory";
  if (S_ISFIFO(mode)) return "a FIFO";
  if (S_ISCHR(mode)) return "a character device";
  if (S_ISBLK(mode)) return "a block device";
  if (S_ISSOCK(mode)) return "a socket";
  if (S_ISLNK(mode)) return "a symlink";
  return "not a regular file";
}

bool write_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;
      return false;
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  return true;
}

// 16 hex digits from the kernel's random pool: a temporary name nobody can plant in advance.
std::string random_suffix() {
  uint64_t value = 0;
  if (::getrandom(&value, sizeof(value), GRND_NONBLOCK) != static_cast<ssize_t>(sizeof(value))) {
    // No entropy yet (early boot): O_EXCL still refuses anything planted; vary by time and pid.
    timespec ts{};
    ::clock_gettime(CLOCK_MONOTONIC, &ts);
    value = static_cast<uint64_t>(ts.tv_nsec) ^ (static_cast<uint64_t>(ts.tv_sec) << 20) ^
            (static_cast<uint64_t>(::getpid()) << 40);
  }
  static const char digits[] = "0123456789abcdef";
  std::string out(16, '0');
  for (char& c : out) {
    c = digits[value & 15];
    value >>= 4;
  }
  return out;
}

}  // namespace

Result<std::string> read_regular_file(const std::string& path, size_t max_bytes, FollowLinks follow) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer (reads of regular files ignore it).
  int flags = O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY;
  if (follow == FollowLinks::No) flags |= O_NOFOLLOW;
  UniqueFd fd(::open(path.c_str(), flags));
  if (!fd.valid()) {
    const int err = errno;
    if (err == ENOENT || err == ENOTDIR) return Error::not_found("cannot read " + path + ": " + errno_text(err));
    if (err == ELOOP && follow == FollowLinks::No)
      return Error::invalid("refusing to read " + path + ": it is a symlink");
    return Error::unavailable("cannot read " + path + ": " + errno_text(err));
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) return Error::unavailable("cannot stat " + path + ": " + errno_text(errno));
  if (!S_ISREG(st.st_mode))
    return Error::invalid("refusing to read " + path + ": it is " + kind_of(st.st_mode) + ", not a regular file");
  if (st.st_size > 0 && static_cast<uint64_t>(st.st_size) > max_bytes)
    return Error::invalid("refusing to read " + path + ": " + std::to_string(st.st_size) + " bytes, more than the " +
                          std::to_string(max_bytes) + "-byte limit");
  // st_size is only a hint (procfs says 0, sysfs says 4096): read until EOF, one byte past the limit.
  std::string out;
  out.resize(std::min<size_t>(max_bytes + 1, st.st_size > 0 ? static_cast<size_t>(st.st_size) + 1 : 4096));
  size_t used = 0;
  while (true) {
    if (used == out.size()) {
      if (out.size() > max_bytes) break;
      out.resize(std::min(max_bytes + 1, out.size() * 2));
    }
    const ssize_t n = ::read(fd.get(), out.data() + used, out.size() - used);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Error::unavailable("cannot read " + path + ": " + errno_text(errno));
    if (n == 0) break;
    used += static_cast<size_t>(n);
  }
  if (used > max_bytes)
    return Error::invalid("refusing to read " + path + ": more than the " + std::to_string(max_bytes) +
                          "-byte limit");
  out.resize(used);
  return out;
}

Status write_file_atomically(const std::string& path, std::string_view content, mode_t mode) {
  const size_t slash = path.rfind('/');
  const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path.substr(0, slash));
  const std::string name = slash == std::string::npos ? path : path.substr(slash + 1);
  if (name.empty() || name == "." || name == "..")
    return Error::invalid("cannot write " + path + ": not a file name");
  UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!dir_fd.valid()) return Error::unavailable("cannot open the folder " + dir + ": " + errno_text(errno));

  std::string temp;
  int fd = -1;  // closed by hand below: close() reports errors (NFS) that a destructor would lose
  for (int attempt = 0; attempt < 16 && fd < 0; ++attempt) {
    temp = "." + name + ".kgpu-" + random_suffix();
    // O_EXCL|O_NOFOLLOW: a planted file or link at this name is refused, never opened.
    fd = ::openat(dir_fd.get(), temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) return Error::unavailable("cannot create a temporary file in " + dir + ": " + errno_text(errno));

  auto fail = [&](const std::string& what, int err) -> Status {
    if (fd >= 0) ::close(fd);
    ::unlinkat(dir_fd.get(), temp.c_str(), 0);
    return Error::unavailable("cannot write " + path + ": " + what + ": " + errno_text(err));
  };
  if (!write_all(fd, content)) return fail("write", errno);
  // The mode is set on our own descriptor (never through a path): the umask may have narrowed it,
  // and readers (NFD, container runtimes) are often other users.
  if (::fchmod(fd, mode) != 0) return fail("fchmod", errno);
  if (::fsync(fd) != 0) return fail("fsync", errno);
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0) return fail("close", errno);
  if (::renameat(dir_fd.get(), temp.c_str(), dir_fd.get(), name.c_str()) != 0) return fail("rename", errno);
  // The rename itself must survive a crash too. Some file systems cannot fsync a folder (EINVAL).
  if (::fsync(dir_fd.get()) != 0 && errno != EINVAL && errno != EROFS)
    return Error::unavailable("cannot flush the folder " + dir + ": " + errno_text(errno));
  return ok_status();
}

}  // namespace kgpu
