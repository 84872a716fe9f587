#include "mps/readiness.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>

#include <cerrno>

#include "core/unique_fd.h"
#include "plan/mps_paths.h"

namespace kgpu {

bool mps_marker_live(const std::string& path) {
  // Non-blocking and link-free: the folder is shared; a FIFO or link here is no marker.
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.valid()) return false;
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  // A shared lock is refused while the supervisor holds its exclusive one; granted, the marker is
  // stale (our lock goes with the fd).
  if (::flock(fd.get(), LOCK_SH | LOCK_NB) == 0) return false;
  return errno == EWOULDBLOCK;
}

bool mps_ready(const Config& config, const Resource& resource) {
  if (resource.sharing != SharingKind::Mps) return true;
  return mps_marker_live(mps_ready_marker(config.mps_root, resource.name));
}

std::string mps_waiting_reason(const Config& config, const Resource& resource) {
  return "waiting for the MPS control daemon (`kgpu mps-daemon` has not marked " +
         mps_ready_marker(config.mps_root, resource.name) + " ready)";
}

ResourcePlan withhold_unready_mps(ResourcePlan plan, const std::function<bool(const Resource&)>& ready) {
  std::erase_if(plan.resources, [&](const Resource& r) {
    if (r.sharing != SharingKind::Mps || ready(r)) return false;
    plan.problems.push_back("Resource " + r.name +
                            " is withheld until its MPS control daemon is ready (see `kgpu mps-daemon`).");
    return true;
  });
  return plan;
}

}  // namespace kgpu
