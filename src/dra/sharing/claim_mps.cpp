#include "dra/sharing/claim_mps.h"

#include <poll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include "core/safe_file.h"
#include "core/unique_fd.h"
#include "mps/readiness.h"
#include "plan/mps_paths.h"

namespace kgpu::dra {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

bool exists_no_follow(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

std::string trimmed(std::string text) {
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
  return text;
}

// Drains the inotify events; false when the watched folder itself went away (its watch is gone).
bool drain_keeps_watch(int fd) {
  alignas(inotify_event) char buffer[4096];
  bool kept = true;
  for (ssize_t n; (n = ::read(fd, buffer, sizeof buffer)) > 0;)
    for (ssize_t at = 0; at + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
      const auto* event = reinterpret_cast<const inotify_event*>(buffer + at);
      if (event->mask & IN_IGNORED) kept = false;
      at += static_cast<ssize_t>(sizeof(inotify_event) + event->len);
    }
  return kept;
}

}  // namespace

Status ClaimMps::start(const MpsClaimRequest& request) const {
  const std::string& root = options_.mps_root;
  const std::string file = mps_claim_request_file(root, request.claim_uid);
  std::error_code ec;
  fs::create_directories(mps_claim_requests_dir(root), ec);
  if (ec) return Error::unavailable("cannot create " + mps_claim_requests_dir(root) + ": " + ec.message());
  const bool existed = exists_no_follow(file);
  // The daemon already runs with this very request (another memory share of its GPU, or the
  // kubelet asking again): nothing to write, nothing to wait for.
  const std::string wanted = render_mps_claim_request(request);
  if (existed && mps_marker_live(mps_ready_marker(root, mps_claim_resource(request.claim_uid))))
    if (auto current = read_regular_file(file, kMpsClaimRequestMaxBytes); current && *current == wanted)
      return ok_status();
  // A note from an earlier attempt is not this attempt's answer.
  ::unlink(mps_claim_failure_note(root, request.claim_uid).c_str());
  if (auto st = write_file_atomically(file, wanted, 0644); !st)
    return Error::unavailable("cannot ask for the claim's MPS control daemon: " + st.error().message);
  auto ready = wait_ready(request.claim_uid);
  if (!ready && !existed) ::unlink(file.c_str());
  if (ready) spdlog::info("DRA: claim {}'s MPS control daemon is ready (GPUs: {})", request.claim_uid,
                          fmt::join(request.visible_devices, ","));
  return ready;
}

Status ClaimMps::stop(const std::string& claim_uid) const {
  const std::string file = mps_claim_request_file(options_.mps_root, claim_uid);
  if (::unlink(file.c_str()) != 0 && errno != ENOENT)
    return Error::unavailable("cannot withdraw " + file + ": " + std::strerror(errno));
  return ok_status();
}

Status ClaimMps::wait_ready(const std::string& claim_uid) const {
  const std::string& root = options_.mps_root;
  const std::string resource = mps_claim_resource(claim_uid);
  const std::string dir = mps_resource_dir(root, resource);
  const std::string marker = mps_ready_marker(root, resource);
  const std::string note = mps_claim_failure_note(root, claim_uid);
  const auto deadline = Clock::now() + options_.ready_timeout;
  UniqueFd inotify(::inotify_init1(IN_NONBLOCK | IN_CLOEXEC));
  if (!inotify.valid()) return Error::unavailable(std::string("inotify_init1: ") + std::strerror(errno));
  bool watching = false;
  for (;;) {
    // The claim's folder is the supervisor's, but may not exist yet (or was just removed with an
    // earlier daemon of this claim): create it and watch it, then look, so no change is missed.
    if (!watching) {
      std::error_code ec;
      fs::create_directories(dir, ec);
      watching = ::inotify_add_watch(inotify.get(), dir.c_str(),
                                     IN_CREATE | IN_MOVED_TO | IN_CLOSE_WRITE | IN_ONLYDIR | IN_DONT_FOLLOW) >= 0;
      if (!watching) return Error::unavailable("cannot watch " + dir + ": " + std::strerror(errno));
    }
    if (mps_marker_live(marker)) return ok_status();
    if (auto failed = read_regular_file(note, kMpsFailureNoteMaxBytes, FollowLinks::No))
      return Error::precondition("the claim's MPS control daemon could not start: " + trimmed(*failed));
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0)
      return Error::unavailable("the claim's MPS control daemon was not ready within " +
                                std::to_string(options_.ready_timeout.count()) + " ms: is `kgpu mps-daemon` running " +
                                "with the same mpsRoot (" + root + ")?");
    pollfd fds[2] = {{inotify.get(), POLLIN, 0}, {options_.cancel_fd, POLLIN, 0}};
    if (::poll(fds, 2, static_cast<int>(left)) < 0 && errno != EINTR)
      return Error::internal(std::string("poll: ") + std::strerror(errno));
    if (fds[1].revents & POLLIN) return Error::unavailable("kgpu is stopping; the claim's MPS daemon was not awaited");
    if (fds[0].revents & POLLIN) watching = drain_keeps_watch(inotify.get());
  }
}

}  // namespace kgpu::dra
