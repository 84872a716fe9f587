#include "server/config_file_watcher.h"

#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kgpu::server {
namespace {

// The file's content, or a marker no real file can hold when it cannot be read.
std::string read_content(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::string("\0<missing>", 10);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

}  // namespace

Result<ConfigFileWatcher> ConfigFileWatcher::open(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  int fd = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) return Error::internal(std::string("inotify_init1: ") + std::strerror(errno));
  constexpr uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_ATTRIB;
  if (::inotify_add_watch(fd, dir.c_str(), mask) < 0) {
    int err = errno;
    ::close(fd);
    return Error::internal("cannot watch the config directory " + dir + ": " + std::strerror(err));
  }
  return ConfigFileWatcher(fd, path, read_content(path));
}

ConfigFileWatcher::ConfigFileWatcher(int fd, std::string path, std::string content)
    : fd_(fd), path_(std::move(path)), last_content_(std::move(content)) {}

bool ConfigFileWatcher::changed() {
  alignas(inotify_event) char buffer[4096];
  while (::read(fd_.get(), buffer, sizeof(buffer)) > 0) {
  }
  std::string now = read_content(path_);
  if (now == last_content_) return false;
  last_content_ = std::move(now);
  return true;
}

}  // namespace kgpu::server
