#include "dra/claims/store_files.h"

#include <sys/stat.h>
#include <time.h>

#include <ctime>
#include <filesystem>
#include <system_error>

namespace kgpu::dra::store_files {

namespace fs = std::filesystem;

bool regular_file_exists(const std::string& path) {
  std::error_code ec;
  return fs::is_regular_file(fs::symlink_status(path, ec));
}

Status remove_file(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    return Error::unavailable("cannot remove " + path + ": " + ec.message());
  return ok_status();
}

std::string utc_stamp() {
  const std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

bool written_since_boot(const std::string& path) {
  struct stat st{};
  timespec real{}, since_boot{};
  if (::lstat(path.c_str(), &st) != 0 || ::clock_gettime(CLOCK_REALTIME, &real) != 0 ||
      ::clock_gettime(CLOCK_BOOTTIME, &since_boot) != 0)
    return true;
  const time_t booted = real.tv_sec - since_boot.tv_sec;
  return st.st_mtim.tv_sec >= booted - 600;
}

}  // namespace kgpu::dra::store_files
