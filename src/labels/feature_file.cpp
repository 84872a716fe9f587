#include "labels/feature_file.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/safe_file.h"

namespace kgpu {
namespace {

// Our own earlier file, read back without following links and within a limit: anything else at
// the path (a symlink, a FIFO, a huge file) simply counts as "different" and gets replaced.
bool same_content(const std::string& path, const std::string& content) {
  auto current = read_regular_file(path, kOwnFileLimit, FollowLinks::No);
  return current && *current == content;
}

}  // namespace

std::string format_labels(const Labels& labels) {
  std::string out;
  for (const auto& [key, value] : labels) out += key + "=" + value + "\n";
  return out;
}

Result<bool> write_feature_file(const std::string& path, const Labels& labels) {
  const std::string content = format_labels(labels);
  if (same_content(path, content)) return false;
  // NFD (another user) must be able to read the file, whatever the umask.
  if (auto st = write_file_atomically(path, content, 0644); !st) return st.error();
  return true;
}

Status remove_feature_file(const std::string& path) {
  // unlink(2) removes a link itself, never its target.
  if (::unlink(path.c_str()) != 0 && errno != ENOENT)
    return Error::unavailable("cannot remove " + path + ": " + std::strerror(errno));
  return ok_status();
}

}  // namespace kgpu
