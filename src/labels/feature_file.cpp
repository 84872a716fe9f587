#include "labels/feature_file.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace kgpu {
namespace {

std::string errno_text() { return std::strerror(errno); }

bool same_content(const std::string& path, const std::string& content) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream current;
  current << in.rdbuf();
  return current.str() == content;
}

}  // namespace

std::string format_labels(const Labels& labels) {
  std::string out;
  for (const auto& [key, value] : labels) out += key + "=" + value + "\n";
  return out;
}

Status write_feature_file(const std::string& path, const Labels& labels) {
  const std::string content = format_labels(labels);
  if (same_content(path, content)) return ok_status();
  const std::string tmp = path + ".tmp." + std::to_string(getpid());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error::unavailable("cannot create " + tmp + ": " + errno_text());
  size_t done = 0;
  while (done < content.size()) {
    const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const auto err = errno_text();
      ::close(fd);
      ::unlink(tmp.c_str());
      return Error::unavailable("cannot write " + tmp + ": " + err);
    }
    done += static_cast<size_t>(n);
  }
  // The umask may have narrowed the mode; NFD (another user) must be able to read the file.
  ::fchmod(fd, 0644);
  if (::fsync(fd) != 0 || ::close(fd) != 0) {
    const auto err = errno_text();
    ::unlink(tmp.c_str());
    return Error::unavailable("cannot flush " + tmp + ": " + err);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const auto err = errno_text();
    ::unlink(tmp.c_str());
    return Error::unavailable("cannot rename " + tmp + " to " + path + ": " + err);
  }
  return ok_status();
}

Status remove_feature_file(const std::string& path) {
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return Error::unavailable("cannot remove " + path + ": " + errno_text());
  return ok_status();
}

}  // namespace kgpu
