#include "mps/supervisor.h"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <map>

#include <spdlog/spdlog.h>

#include "mps/process.h"

namespace kgpu {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

constexpr const char* kPidFile = "nvidia-cuda-mps-control.pid";

std::map<std::string, std::string> daemon_env(const MpsDaemonSpec& s) {
  return {{"CUDA_MPS_PIPE_DIRECTORY", s.pipe_dir}, {"CUDA_MPS_LOG_DIRECTORY", s.log_dir}};
}

Result<int> read_pid(const std::string& pipe_dir) {
  std::ifstream in(pipe_dir + "/" + kPidFile);
  int pid = 0;
  if (!(in >> pid) || pid <= 0)
    return Error::unavailable("the control daemon wrote no PID to " + pipe_dir + "/" + kPidFile);
  return pid;
}

// Written to a temporary name and renamed, so a reader never sees a half-written marker.
Status write_marker(const std::string& path, int pid) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << pid << "\n";
    if (!out) return Error::unavailable("cannot write " + tmp);
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  if (ec) return Error::unavailable("cannot create " + path + ": " + ec.message());
  return ok_status();
}

void remove_marker(const std::string& path) {
  std::error_code ec;
  fs::remove(path, ec);
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

MpsSupervisor::~MpsSupervisor() {
  for (auto& d : daemons_)
    if (d.pidfd >= 0) ::close(d.pidfd);
}

Status MpsSupervisor::start(Daemon& d) {
  const auto& s = d.spec;
  remove_marker(s.ready_marker);  // stale from a previous run: not ready until proven
  std::error_code ec;
  for (const auto& dir : {s.pipe_dir, s.log_dir}) {
    fs::create_directories(dir, ec);
    if (ec) return Error::unavailable("cannot create " + dir + ": " + ec.message());
  }
  const auto env = daemon_env(s);
  auto rc = mps::run_program({options_.control_binary, "-d"}, env, "", options_.command_timeout);
  if (!rc) return rc.error();
  if (*rc != 0)
    return Error::unavailable(options_.control_binary + " -d exited with status " + std::to_string(*rc));
  auto pid = read_pid(s.pipe_dir);
  if (!pid) return pid.error();
  d.pid = *pid;
  auto pidfd = mps::open_pidfd(d.pid);
  if (!pidfd) return pidfd.error();
  d.pidfd = *pidfd;
  for (const auto& command : s.commands) {
    auto crc = mps::run_program({options_.control_binary}, env, command + "\n", options_.command_timeout);
    if (!crc) return crc.error();
    if (*crc != 0) return Error::unavailable("control command \"" + command + "\" failed with status " +
                                             std::to_string(*crc));
  }
  if (auto st = write_marker(s.ready_marker, d.pid); !st) return st.error();
  d.started = Clock::now();
  spdlog::info("MPS control daemon for {} is ready (pid {}, pipe {})", s.resource, d.pid, s.pipe_dir);
  return ok_status();
}

void MpsSupervisor::stop(Daemon& d) {
  remove_marker(d.spec.ready_marker);  // withdraw readiness first: no new pods while it goes away
  if (d.pidfd < 0) return;
  auto rc = mps::run_program({options_.control_binary}, daemon_env(d.spec), "quit\n", options_.command_timeout);
  if (!rc || *rc != 0 || !mps::wait_readable(d.pidfd, options_.stop_timeout)) {
    spdlog::warn("MPS control daemon for {} (pid {}) did not quit; killing it", d.spec.resource, d.pid);
    ::kill(d.pid, SIGKILL);
    (void)mps::wait_readable(d.pidfd, options_.stop_timeout);
  }
  ::close(d.pidfd);
  d.pidfd = -1;
  d.pid = -1;
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

Status MpsSupervisor::run(int stop_fd) {
  auto try_start = [&](Daemon& d) {
    if (auto st = start(d); !st) {
      spdlog::error("MPS control daemon for {} failed to start: {}", d.spec.resource, st.error().message);
      stop(d);  // a half-started daemon is quit, so the retry starts clean
      schedule_restart(d);
    }
  };
  for (auto& d : daemons_) try_start(d);

  for (;;) {
    std::vector<pollfd> fds{{stop_fd, POLLIN, 0}};
    std::vector<Daemon*> watched;
    auto next = Clock::time_point::max();
    for (auto& d : daemons_) {
      if (d.running()) {
        fds.push_back({d.pidfd, POLLIN, 0});
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
    if (n < 0 && errno != EINTR) return Error::internal("poll failed in the MPS supervisor");
    if (n > 0 && (fds[0].revents & (POLLIN | POLLHUP | POLLERR))) break;
    for (size_t i = 0; n > 0 && i < watched.size(); ++i) {
      if (!(fds[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Daemon& d = *watched[i];
      spdlog::warn("MPS control daemon for {} (pid {}) exited; restarting", d.spec.resource, d.pid);
      remove_marker(d.spec.ready_marker);
      ::close(d.pidfd);
      d.pidfd = -1;
      d.pid = -1;
      schedule_restart(d);
    }
    const auto now = Clock::now();
    for (auto& d : daemons_)
      if (!d.running() && d.next_start <= now) try_start(d);
  }
  for (auto& d : daemons_) stop(d);
  return ok_status();
}

}  // namespace kgpu
