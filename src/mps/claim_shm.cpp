#include "mps/claim_shm.h"

#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>

#include <linux/magic.h>

namespace kgpu {

namespace fs = std::filesystem;

namespace {

// MemTotal in bytes, or 0 when missing or not as the kernel writes it.
uint64_t mem_total_bytes(std::string_view meminfo) {
  constexpr std::string_view kKey = "MemTotal:";
  for (size_t start = 0; start < meminfo.size();) {
    size_t end = meminfo.find('\n', start);
    if (end == std::string_view::npos) end = meminfo.size();
    std::string_view line = meminfo.substr(start, end - start);
    start = end + 1;
    if (!line.starts_with(kKey)) continue;
    line.remove_prefix(kKey.size());
    while (!line.empty() && line.front() == ' ') line.remove_prefix(1);
    uint64_t kib = 0;
    auto [rest, ec] = std::from_chars(line.data(), line.data() + line.size(), kib);
    // The kernel writes "MemTotal:  <n> kB"; anything else is not trusted.
    if (ec != std::errc() || std::string_view(rest, line.data() + line.size()) != " kB" || kib == 0 ||
        kib > (UINT64_MAX >> 10))
      return 0;
    return kib << 10;
  }
  return 0;
}

std::string mib_text(uint64_t bytes) { return std::to_string(bytes >> 20) + " MiB"; }

}  // namespace

uint64_t default_claim_shm_bytes(std::string_view meminfo) {
  const uint64_t total = mem_total_bytes(meminfo);
  if (total == 0) return kClaimShmFallbackBytes;
  return std::max(kClaimShmMinBytes, total / 2);
}

Status check_claim_shm_bytes(const std::string& flag, uint64_t bytes, std::string_view meminfo) {
  const std::string given = "--claim-shm-size " + flag + " (" + std::to_string(bytes) + " bytes)";
  if (bytes < kClaimShmMinBytes) return Error::invalid(given + " is below the 1 MiB a claim's /dev/shm needs");
  const uint64_t total = mem_total_bytes(meminfo);
  if (total != 0 && bytes > total)
    return Error::invalid(given + " is more than the node's memory (" + mib_text(total) +
                          "): one claim could fill the node's memory through its /dev/shm");
  if (total == 0 && bytes > kClaimShmMaxBytes)
    return Error::invalid(given + " is more than " + mib_text(kClaimShmMaxBytes) +
                          " (the node's memory is unknown: /proc/meminfo has no MemTotal)");
  return ok_status();
}

bool is_tmpfs_mount_point(const std::string& dir) {
  struct statfs fs_info {};
  struct stat self {}, parent {};
  if (::statfs(dir.c_str(), &fs_info) != 0 || fs_info.f_type != TMPFS_MAGIC) return false;
  if (::lstat(dir.c_str(), &self) != 0 || !S_ISDIR(self.st_mode)) return false;
  // A folder on a tmpfs (/tmp often is one) shares its parent's device; a mount point does not.
  if (::stat((dir + "/..").c_str(), &parent) != 0) return false;
  return self.st_dev != parent.st_dev;
}

Status mount_claim_shm(const std::string& dir, uint64_t bytes) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return Error::unavailable("cannot create the claim's shared-memory folder " + dir + ": " + ec.message());
  if (is_tmpfs_mount_point(dir)) return ok_status();
  const std::string options = "size=" + std::to_string(bytes) + ",mode=1777";
  if (::mount("kgpu-mps-shm", dir.c_str(), "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, options.c_str()) != 0) {
    const int error = errno;
    return Error::unavailable("cannot mount a " + std::to_string(bytes >> 20) + " MiB tmpfs at " + dir +
                              " for the claim's MPS shared memory: " + std::strerror(error) +
                              (error == EPERM ? " (kgpu mps-daemon needs CAP_SYS_ADMIN: run it privileged)" : ""));
  }
  return ok_status();
}

Status unmount_claim_shm(const std::string& dir) {
  if (!is_tmpfs_mount_point(dir)) return ok_status();
  if (::umount2(dir.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0 && errno != EINVAL)
    return Error::unavailable("cannot unmount the claim's shared memory at " + dir + ": " + std::strerror(errno));
  return ok_status();
}

}  // namespace kgpu
