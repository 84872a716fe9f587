#include "server/config_file_watcher.h"

#include <sys/inotify.h>

#include <filesystem>

#include "core/safe_file.h"

namespace kgpu::server {
namespace {

// The file's content, or a marker no real file can hold when it cannot be read (the reason is part
// of it, so a FIFO replacing a missing file still counts as a change).
std::string read_content(const std::string& path) {
  auto text = read_regular_file(path, kConfigFileLimit);
  if (text) return std::move(*text);
  std::string marker(1, '\0');
  marker.append("<unreadable> ").append(text.error().message);
  return marker;
}

}  // namespace

Result<ConfigFileWatcher> ConfigFileWatcher::open(const std::string& path) {
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  const std::string dir = (parent.empty() ? std::filesystem::path(".") : parent).string();
  constexpr uint32_t mask = IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_DELETE | IN_MOVED_FROM | IN_ATTRIB;
  auto watch = DirWatch::open({dir}, mask);
  if (!watch) return Error::internal("cannot watch the config directory " + dir + ": " + watch.error().message);
  return ConfigFileWatcher(std::move(*watch), path, read_content(path));
}

ConfigFileWatcher::ConfigFileWatcher(DirWatch watch, std::string path, std::string content)
    : watch_(std::move(watch)), path_(std::move(path)), last_content_(std::move(content)) {}

bool ConfigFileWatcher::changed() {
  if (!watch_.drain()) return false;
  std::string now = read_content(path_);
  if (now == last_content_) return false;
  last_content_ = std::move(now);
  return true;
}

}  // namespace kgpu::server
