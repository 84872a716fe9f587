#include "cdi/spec_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace kgpu {
namespace {

namespace fs = std::filesystem;

std::string errno_text() { return std::strerror(errno); }

// write(2) until everything is written or an error occurs.
bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::string cdi_spec_file_name(const std::string& kind) {
  std::string name = kind;
  for (char& c : name)
    if (c == '/') c = '-';
  return "kgpu-" + name + ".json";
}

Result<std::string> write_cdi_spec(const std::string& dir, const std::string& kind, const nlohmann::json& spec) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error::unavailable("cannot create CDI spec folder " + dir + ": " + ec.message());
  const std::string name = cdi_spec_file_name(kind);
  const std::string path = (fs::path(dir) / name).string();
  const std::string temp = (fs::path(dir) / ("." + name + "." + std::to_string(::getpid()) + ".tmp")).string();
  const std::string text = spec.dump(2) + "\n";

  int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error::unavailable("cannot create " + temp + ": " + errno_text());
  // The umask may have narrowed the mode; runtimes (often another user) must be able to read it.
  bool ok = ::fchmod(fd, 0644) == 0 && write_all(fd, text) && ::fsync(fd) == 0;
  std::string failure = ok ? "" : errno_text();
  if (::close(fd) != 0 && ok) {
    ok = false;
    failure = errno_text();
  }
  if (!ok || ::rename(temp.c_str(), path.c_str()) != 0) {
    if (ok) failure = errno_text();
    ::unlink(temp.c_str());
    return Error::unavailable("cannot write CDI spec " + path + ": " + failure);
  }

  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string other = it->path().filename().string();
    if (other == name || !other.starts_with("kgpu-")) continue;
    if (other.ends_with(".json") || other.ends_with(".yaml")) fs::remove(it->path(), ec);
  }
  return path;
}

}  // namespace kgpu
