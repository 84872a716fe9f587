#include "mps/supervisor.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <map>

#include <spdlog/spdlog.h>

#include "core/safe_file.h"
#include "mps/claim_request_folder.h"
#include "mps/claim_shm.h"
#include "mps/process.h"

namespace kgpu {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kPidFile = "nvidia-cuda-mps-control.pid";

std::map<std::string, std::string> daemon_env(const MpsDaemonSpec& s) {
  std::map<std::string, std::string> env{{"CUDA_MPS_PIPE_DIRECTORY", s.pipe_dir}, {"CUDA_MPS_LOG_DIRECTORY", s.log_dir}};
  if (!s.visible_devices.empty()) env["CUDA_VISIBLE_DEVICES"] = s.visible_devices;
  return env;
}

std::string pid_file(const MpsDaemonSpec& s) { return s.pipe_dir + "/" + kPidFile; }

bool stop_requested(int stop_fd) { return mps::wait_readable(stop_fd, std::chrono::milliseconds(0)); }

// The daemon's own folder under mpsRoot (<mpsRoot>/<resource>): where its pipe, log and markers are.
fs::path mps_folder(const MpsDaemonSpec& s) { return fs::path(s.ready_marker).parent_path(); }

// The PID the control daemon wrote. The pipe folder is shared with every MPS client, so the file
// is read like any outside input: no links, no FIFOs, a few bytes at most, digits only.
Result<int> read_pid(const std::string& path) {
  auto read = read_regular_file(path, 32, FollowLinks::No);
  if (!read || read->empty()) return Error::unavailable("the control daemon wrote no PID to " + path);
  std::string_view text(*read);
  while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.remove_suffix(1);
  int pid = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), pid);
  if (ec != std::errc() || end != text.data() + text.size() || pid <= 0)
    return Error::unavailable(path + " holds no valid PID");
  return pid;
}

void remove_marker(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
}

// Written to a fresh temporary file (never through a planted link) under an exclusive flock and
// renamed into place, so a reader never sees a half-written marker and the lock covers the marker
// itself. The returned fd keeps the lock: closing it (or dying) makes the marker stale.
Result<UniqueFd> write_marker(const std::string& path, int pid) {
  const std::string tmp = path + ".tmp";
  ::unlink(tmp.c_str());
  UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.valid()) return Error::unavailable("cannot write " + tmp + ": " + std::strerror(errno));
  if (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
    ::unlink(tmp.c_str());
    return Error::unavailable("cannot lock " + tmp + ": " + std::strerror(errno));
  }
  const std::string text = std::to_string(pid) + "\n";
  if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
      ::rename(tmp.c_str(), path.c_str()) != 0) {
    const std::string why = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Error::unavailable("cannot create " + path + ": " + why);
  }
  return fd;
}

}  // namespace

MpsSupervisor::MpsSupervisor(std::vector<MpsDaemonSpec> specs, MpsSupervisorOptions options)
    : options_(std::move(options)) {
  for (auto& s : specs) {
    Daemon d;
    d.spec = std::move(s);
    daemons_.push_back(std::move(d));
  }
}

MpsSupervisor::~MpsSupervisor() = default;

// A control daemon of an earlier run (the supervisor was killed) still owns the pipe folder: ask it
// to quit through the control pipe, which reaches only a daemon listening there (never a PID).
void MpsSupervisor::quit_leftover(const MpsDaemonSpec& spec, int stop_fd) {
  struct stat st {};
  if (::lstat(pid_file(spec).c_str(), &st) != 0) return;
  spdlog::info("MPS control daemon for {}: found {} from an earlier run; sending quit", spec.resource, pid_file(spec));
  auto rc = mps::run_program({options_.control_binary}, daemon_env(spec), "quit\n", options_.command_timeout, stop_fd,
                             spec.shm_dir);
  if (!rc) spdlog::warn("MPS control daemon for {}: quit of an earlier daemon: {}", spec.resource, rc.error().message);
}

// Issue 38, item 2: a claim unprepared while no supervisor ran left its daemon listening, its
// tmpfs mounted (by default half the node's memory) and its folder behind, for good.
void MpsSupervisor::sweep(const MpsDaemonSource& source, int stop_fd) {
  for (const auto& spec : source.leftovers()) {
    if (stop_requested(stop_fd)) return;
    spdlog::info("MPS control daemon for {}: {} no longer wants it (withdrawn while no supervisor ran); quitting "
                 "what is left of it and removing {}",
                 spec.resource, source.name(), mps_folder(spec).string());
    quit_leftover(spec, stop_fd);
    // The shared memory first: removing files under a mounted tmpfs would leave it mounted.
    if (!spec.shm_dir.empty())
      if (auto st = unmount_claim_shm(spec.shm_dir); !st)
        spdlog::warn("MPS control daemon for {}: {}", spec.resource, st.error().message);
    std::error_code ec;
    fs::remove_all(mps_folder(spec), ec);
    if (ec) spdlog::warn("MPS control daemon for {}: cannot remove its folder: {}", spec.resource, ec.message());
  }
}

Status MpsSupervisor::start(Daemon& d, int stop_fd) {
  const auto& s = d.spec;
  remove_marker(s.ready_marker);  // stale from a previous run: not ready until proven
  if (!s.failure_note.empty()) remove_marker(s.failure_note);  // this attempt writes its own
  std::error_code ec;
  for (const auto& dir : {s.pipe_dir, s.log_dir}) {
    fs::create_directories(dir, ec);
    if (ec) return Error::unavailable("cannot create " + dir + ": " + ec.message());
  }
  // Before the daemon: its MPS server creates its segments there from the first client on.
  if (!s.shm_dir.empty())
    if (auto st = mount_claim_shm(s.shm_dir, s.shm_bytes); !st) return st.error();
  quit_leftover(s, stop_fd);
  // Whatever is in the PID file now is not the daemon we are about to start.
  if (::unlink(pid_file(s).c_str()) != 0 && errno != ENOENT)
    return Error::unavailable("cannot remove " + pid_file(s) + ": " + std::strerror(errno));
  const auto env = daemon_env(s);
  auto rc = mps::run_program({options_.control_binary, "-d"}, env, "", options_.command_timeout, stop_fd, s.shm_dir);
  if (!rc) return rc.error();
  if (*rc != 0)
    return Error::unavailable(options_.control_binary + " -d exited with status " + std::to_string(*rc));
  auto pid = read_pid(pid_file(s));
  if (!pid) return pid.error();
  auto pidfd = mps::open_pidfd(*pid);
  if (!pidfd) return pidfd.error();
  UniqueFd owned(*pidfd);
  // Subreaper: the daemon that -d left behind is our child (or, while a double fork settles, our
  // grandchild). Anything else was planted or reused.
  if (!mps::is_own_descendant(*pid, owned.get()))
    return Error::unavailable("PID " + std::to_string(*pid) + " in " + pid_file(s) +
                              " is not a control daemon this supervisor started; not tracking it");
  d.pid = *pid;
  d.pidfd = std::move(owned);
  for (const auto& command : s.commands) {
    auto crc =
        mps::run_program({options_.control_binary}, env, command + "\n", options_.command_timeout, stop_fd, s.shm_dir);
    if (!crc) return crc.error();
    if (*crc != 0) return Error::unavailable("control command \"" + command + "\" failed with status " +
                                             std::to_string(*crc));
  }
  auto lock = write_marker(s.ready_marker, d.pid);
  if (!lock) return lock.error();
  d.marker_lock = std::move(*lock);
  d.started = Clock::now();
  spdlog::info("MPS control daemon for {} is ready (pid {}, pipe {})", s.resource, d.pid, s.pipe_dir);
  return ok_status();
}

// The daemon exited (its pidfd fired): withdraw readiness and reap it.
void MpsSupervisor::forget(Daemon& d) {
  remove_marker(d.spec.ready_marker);
  d.marker_lock.reset();
  if (d.pidfd.valid()) mps::reap_pidfd(d.pidfd.get());  // ours (see is_own_child); may be reaped already
  d.pidfd.reset();
  d.pid = -1;
}

// Readiness goes first (no new pods while the daemons go away); then every daemon gets its quit at
// once, and all of them share one stop_timeout before the ones left are killed through their pidfd.
void MpsSupervisor::stop_daemons(const std::vector<Daemon*>& which) {
  for (Daemon* d : which) {
    remove_marker(d->spec.ready_marker);
    d->marker_lock.reset();
  }
  const auto deadline = Clock::now() + options_.stop_timeout;
  std::vector<std::pair<Daemon*, mps::Child>> quits;
  for (Daemon* d : which) {
    if (!d->running()) continue;
    auto child = mps::spawn_program({options_.control_binary}, daemon_env(d->spec), "quit\n", d->spec.shm_dir);
    if (child) quits.emplace_back(d, std::move(*child));
    else spdlog::warn("MPS control daemon for {}: cannot send quit: {}", d->spec.resource, child.error().message);
  }
  for (auto& [d, child] : quits) {
    auto rc = mps::finish_program(child, deadline);
    if (!rc || *rc != 0)
      spdlog::warn("MPS control daemon for {}: quit {}", d->spec.resource,
                   rc ? "exited with status " + std::to_string(*rc) : rc.error().message);
  }
  for (Daemon* d : which) {
    if (!d->running()) continue;
    if (!mps::wait_readable_until(d->pidfd.get(), deadline)) {
      spdlog::warn("MPS control daemon for {} (pid {}) did not quit; killing it", d->spec.resource, d->pid);
      mps::signal_pidfd(d->pidfd.get(), SIGKILL);
      (void)mps::wait_readable(d->pidfd.get(), std::chrono::milliseconds(1000));
    }
    forget(*d);
  }
}

void MpsSupervisor::schedule_restart(Daemon& d) {
  // A daemon that ran longer than the longest backoff was healthy: start counting again.
  if (d.started != Clock::time_point{} && Clock::now() - d.started > options_.max_backoff) d.failures = 0;
  auto delay = options_.initial_backoff;
  for (int i = 0; i < d.failures && delay < options_.max_backoff; ++i) delay *= 2;
  delay = std::min(delay, options_.max_backoff);
  ++d.failures;
  d.started = {};
  d.next_start = Clock::now() + delay;
  spdlog::info("MPS control daemon for {}: next start in {} ms", d.spec.resource, delay.count());
}

void MpsSupervisor::try_start(Daemon& d, int stop_fd) {
  if (auto st = start(d, stop_fd); !st) {
    spdlog::error("MPS control daemon for {} failed to start: {}", d.spec.resource, st.error().message);
    stop_daemons({&d});  // a half-started daemon is quit, so the retry starts clean
    if (!d.spec.failure_note.empty()) write_failure_note(d.spec.failure_note, st.error().message);
    schedule_restart(d);
  }
}

// The daemons of `source` become the ones it wants now: a daemon it no longer wants, or wants with
// another spec, is quit (a released claim's folder is removed with it); new specs start. Daemons of
// other sources are left alone.
void MpsSupervisor::follow(MpsDaemonSource& source, int stop_fd) {
  auto wanted = source.wanted();
  if (!wanted) return;
  for (auto it = daemons_.begin(); it != daemons_.end();) {
    if (it->source != &source) {
      ++it;
      continue;
    }
    if (auto same = std::find(wanted->begin(), wanted->end(), it->spec); same != wanted->end()) {
      wanted->erase(same);  // running as wanted
      ++it;
      continue;
    }
    const bool changed = std::any_of(wanted->begin(), wanted->end(),
                                     [&](const MpsDaemonSpec& w) { return w.resource == it->spec.resource; });
    spdlog::info("MPS control daemon for {}: {} {} it; stopping it", it->spec.resource, source.name(),
                 changed ? "changed" : "no longer wants");
    stop_daemons({&*it});
    if (!changed && source.removes_released_folders()) {
      // The claim's shared memory first: removing files under a mounted tmpfs would leave it mounted.
      if (!it->spec.shm_dir.empty())
        if (auto st = unmount_claim_shm(it->spec.shm_dir); !st)
          spdlog::warn("MPS control daemon for {}: {}", it->spec.resource, st.error().message);
      std::error_code ec;
      fs::remove_all(mps_folder(it->spec), ec);
      if (ec) spdlog::warn("MPS control daemon for {}: cannot remove its folder: {}", it->spec.resource, ec.message());
    }
    it = daemons_.erase(it);
  }
  for (auto& spec : *wanted) {
    if (stop_requested(stop_fd)) return;
    Daemon& d = daemons_.emplace_back();
    d.spec = std::move(spec);
    d.source = &source;
    spdlog::info("MPS control daemon for {}: wanted by {}; starting it (GPUs: {})", d.spec.resource, source.name(),
                 d.spec.visible_devices.empty() ? "all" : d.spec.visible_devices);
    try_start(d, stop_fd);
  }
}

Status MpsSupervisor::run(int stop_fd, int child_fd, const std::vector<MpsDaemonSource*>& sources) {
  if (auto st = mps::become_subreaper(); !st)
    spdlog::warn("MPS supervisor: {}; a daemon that forks away cannot be tracked", st.error().message);
  for (auto& d : daemons_) {
    if (stop_requested(stop_fd)) break;
    try_start(d, stop_fd);
  }
  for (auto* source : sources) sweep(*source, stop_fd);
  for (auto* source : sources) follow(*source, stop_fd);

  Status failure = ok_status();
  while (!stop_requested(stop_fd)) {
    std::vector<pollfd> fds{{stop_fd, POLLIN, 0}, {child_fd, POLLIN, 0}};
    for (auto* source : sources) fds.push_back({source->fd(), POLLIN, 0});
    const size_t first_daemon = fds.size();
    std::vector<Daemon*> watched;
    auto next = Clock::time_point::max();
    for (auto& d : daemons_) {
      if (d.running()) {
        fds.push_back({d.pidfd.get(), POLLIN, 0});
        watched.push_back(&d);
      } else {
        next = std::min(next, d.next_start);
      }
    }
    int timeout = -1;
    if (next != Clock::time_point::max()) {
      const auto left = std::chrono::ceil<std::chrono::milliseconds>(next - Clock::now()).count();
      timeout = static_cast<int>(std::clamp<int64_t>(left, 0, 24 * 3600 * 1000));
    }
    const int n = ::poll(fds.data(), fds.size(), timeout);
    if (n < 0 && errno != EINTR) {
      failure = Error::internal(std::string("poll failed in the MPS supervisor: ") + std::strerror(errno));
      break;  // still stop every daemon
    }
    if (n > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) break;
    if (n > 0 && (fds[1].revents & POLLIN)) {
      char buf[sizeof(signalfd_siginfo) * 8];
      while (::read(child_fd, buf, sizeof buf) > 0) {
      }
    }
    for (size_t i = 0; n > 0 && i < watched.size(); ++i) {
      if (!(fds[first_daemon + i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Daemon& d = *watched[i];
      spdlog::warn("MPS control daemon for {} (pid {}) exited; restarting", d.spec.resource, d.pid);
      forget(d);
      schedule_restart(d);
    }
    // Reparented processes (MPS servers of a dead daemon, daemonising helpers) end up ours too.
    mps::reap_exited_children();
    const auto now = Clock::now();
    for (auto& d : daemons_)
      if (!d.running() && d.next_start <= now && !stop_requested(stop_fd)) try_start(d, stop_fd);
    for (size_t i = 0; n > 0 && i < sources.size(); ++i)
      if (fds[2 + i].revents & POLLIN) follow(*sources[i], stop_fd);
  }
  std::vector<Daemon*> all;
  for (auto& d : daemons_) all.push_back(&d);
  stop_daemons(all);
  mps::reap_exited_children();
  return failure;
}

}  // namespace kgpu
