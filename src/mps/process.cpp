#include "mps/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pthread.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string_view>

extern char** environ;

namespace kgpu::mps {

namespace {

// P_PIDFD (Linux 5.4) may be missing from older headers.
#ifdef P_PIDFD
constexpr int kPidfdIdType = P_PIDFD;
#else
constexpr int kPidfdIdType = 3;
#endif

std::string errno_text(const std::string& what) { return what + ": " + std::strerror(errno); }

std::vector<std::string> merged_environment(const std::map<std::string, std::string>& extra) {
  std::vector<std::string> out;
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq != std::string::npos && extra.contains(kv.substr(0, eq))) continue;
    out.push_back(kv);
  }
  for (const auto& [k, v] : extra) out.push_back(k + "=" + v);
  return out;
}

std::vector<char*> pointers(std::vector<std::string>& strings) {
  std::vector<char*> out;
  for (auto& s : strings) out.push_back(s.data());
  out.push_back(nullptr);
  return out;
}

int exit_code(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

// A child that exits without reading its stdin must not kill us with SIGPIPE: block it on this
// thread for the write, and discard the one it may have raised.
void write_ignoring_sigpipe(int fd, const std::string& text) {
  sigset_t pipe_set, old;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
  size_t off = 0;
  bool broken = false;
  while (off < text.size()) {
    const ssize_t w = ::write(fd, text.data() + off, text.size() - off);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) {
      broken = errno == EPIPE;
      break;
    }
    off += static_cast<size_t>(w);
  }
  if (broken) {
    const timespec zero{0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old, nullptr);
}

// The signals a child gets back at their default disposition (the caller may block or catch them).
constexpr int kDefaultedSignals[] = {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD};

// argv[0] as posix_spawnp finds it: as given when it has a '/', else the first executable file of
// that name in PATH. Resolved before a fork, where the child may only make system calls.
Result<std::string> resolve_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string_view dirs = path && *path ? path : "/usr/local/bin:/usr/bin:/bin";
  for (;;) {
    const size_t colon = dirs.find(':');
    std::string dir(dirs.substr(0, colon));
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    struct stat st {};
    if (::stat(candidate.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(candidate.c_str(), X_OK) == 0)
      return candidate;
    if (colon == std::string_view::npos) break;
    dirs.remove_prefix(colon + 1);
  }
  return Error::unavailable("cannot run " + name + ": not found in PATH");
}

// The steps between fork and exec of a child with its own /dev/shm, named for the error.
enum class ShmStep : int { Unshare = 1, SlaveRoot, BindShm, Exec };

std::string shm_step_text(ShmStep step, const std::string& dev_shm) {
  switch (step) {
    case ShmStep::Unshare: return "unshare(CLONE_NEWNS)";
    case ShmStep::SlaveRoot: return "making / a slave mount in its namespace";
    case ShmStep::BindShm: return "bind-mounting " + dev_shm + " at /dev/shm";
    case ShmStep::Exec: return "exec";
  }
  return "an unknown step";
}

// fork + exec of `program` in a mount namespace of its own with `dev_shm` at /dev/shm; posix_spawn
// cannot unshare. Between fork and exec the child makes system calls only (async-signal-safe: the
// parent may have other threads), and a failed step comes back through a close-on-exec pipe, so
// the caller gets the reason instead of a bare exit status.
Result<pid_t> fork_with_private_shm(const std::string& program, char* const* argp, char* const* envp, int stdin_fd,
                                    const std::string& dev_shm) {
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return Error::internal(errno_text("pipe2"));
  struct sigaction defaults {};
  defaults.sa_handler = SIG_DFL;
  sigset_t empty;
  sigemptyset(&empty);
  const pid_t pid = ::fork();
  if (pid == 0) {
    for (int sig : kDefaultedSignals) ::sigaction(sig, &defaults, nullptr);
    ::sigprocmask(SIG_SETMASK, &empty, nullptr);
    ShmStep step = ShmStep::Unshare;
    bool ok = ::dup2(stdin_fd, STDIN_FILENO) >= 0 && ::unshare(CLONE_NEWNS) == 0;
    // Slave, not private: mounts the host adds later (another claim's tmpfs) still show, while
    // the bind below stays in this namespace.
    if (ok) step = ShmStep::SlaveRoot, ok = ::mount(nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) == 0;
    if (ok) step = ShmStep::BindShm, ok = ::mount(dev_shm.c_str(), "/dev/shm", nullptr, MS_BIND, nullptr) == 0;
    if (ok) step = ShmStep::Exec, ::execve(program.c_str(), argp, envp);
    const int failure[2] = {static_cast<int>(step), errno};
    (void)!::write(report[1], failure, sizeof failure);
    ::_exit(127);
  }
  const int fork_errno = errno;
  ::close(report[1]);
  if (pid < 0) {
    ::close(report[0]);
    return Error::unavailable("cannot run " + program + ": fork: " + std::strerror(fork_errno));
  }
  int failure[2] = {0, 0};
  ssize_t got;
  while ((got = ::read(report[0], failure, sizeof failure)) < 0 && errno == EINTR) {
  }
  ::close(report[0]);
  if (got <= 0) return pid;  // the pipe closed at exec: the program runs
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return Error::unavailable("cannot run " + program + " with its own /dev/shm (" + dev_shm + "): " +
                            shm_step_text(static_cast<ShmStep>(failure[0]), dev_shm) + " failed: " +
                            std::strerror(failure[1]) +
                            (failure[1] == EPERM ? " (kgpu mps-daemon needs CAP_SYS_ADMIN: run it privileged)" : ""));
}

}  // namespace

bool wait_readable_until(int fd, Deadline deadline, int cancel_fd) {
  for (;;) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p[2] = {{fd, POLLIN, 0}, {cancel_fd, POLLIN, 0}};
    const int n = ::poll(p, cancel_fd >= 0 ? 2 : 1, static_cast<int>(std::clamp<int64_t>(left.count(), 0, INT32_MAX)));
    if (n > 0) return (p[0].revents & (POLLIN | POLLHUP | POLLERR)) != 0;
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

bool wait_readable(int fd, std::chrono::milliseconds timeout) {
  return wait_readable_until(fd, std::chrono::steady_clock::now() + timeout);
}

Result<int> open_pidfd(int pid) {
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0) return Error::unavailable(errno_text("pidfd_open(" + std::to_string(pid) + ")"));
  return static_cast<int>(fd);
}

bool is_own_child(int pidfd) {
  // waitid(P_PIDFD) answers ECHILD for any process that is not our child; WNOWAIT leaves a zombie
  // for the real reaping. si_pid stays 0 while the child runs.
  siginfo_t info{};
  return ::waitid(static_cast<idtype_t>(kPidfdIdType), static_cast<id_t>(pidfd), &info,
                  WEXITED | WNOHANG | WNOWAIT) == 0;
}

namespace {

// The parent PID from /proc/<pid>/stat ("pid (comm) state ppid ..."; comm may hold ") ").
int parent_of(int pid) {
  UniqueFd fd(::open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.valid()) return -1;
  char buf[512];
  const ssize_t n = ::read(fd.get(), buf, sizeof buf - 1);
  if (n <= 0) return -1;
  buf[n] = '\0';
  const char* close = std::strrchr(buf, ')');
  int ppid = -1;
  char state = 0;
  if (close == nullptr || std::sscanf(close + 1, " %c %d", &state, &ppid) != 2) return -1;
  return ppid;
}

}  // namespace

bool is_own_descendant(int pid, int pidfd) {
  if (is_own_child(pidfd)) return true;
  const int self = ::getpid();
  int p = pid;
  for (int depth = 0; depth < 16 && p > 1; ++depth) {
    p = parent_of(p);
    if (p == self) {
      // The chain was read from /proc by PID: it was about our process only if it is still alive.
      return !wait_readable(pidfd, std::chrono::milliseconds(0));
    }
  }
  return false;
}

void reap_pidfd(int pidfd) {
  siginfo_t info{};
  while (::waitid(static_cast<idtype_t>(kPidfdIdType), static_cast<id_t>(pidfd), &info, WEXITED | WNOHANG) < 0 &&
         errno == EINTR) {
  }
}

bool signal_pidfd(int pidfd, int sig) { return ::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0) == 0; }

Status become_subreaper() {
  if (::prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0) return Error::unavailable(errno_text("PR_SET_CHILD_SUBREAPER"));
  return ok_status();
}

int reap_exited_children() {
  int reaped = 0;
  for (;;) {
    int status = 0;
    const pid_t pid = ::waitpid(-1, &status, WNOHANG);
    if (pid > 0) {
      ++reaped;
      continue;
    }
    if (pid < 0 && errno == EINTR) continue;
    return reaped;
  }
}

namespace {

// posix_spawn(p) with an empty signal mask and default dispositions: the caller may block SIGTERM
// etc. for its signalfd, and a daemon inheriting that mask could not be stopped by `quit`.
Result<pid_t> spawn_plainly(const std::string& program, char* const* argp, char* const* envp, int stdin_fd) {
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, stdin_fd, STDIN_FILENO);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int sig : kDefaultedSignals) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = program.find('/') == std::string::npos
                     ? ::posix_spawnp(&pid, program.c_str(), &actions, &attr, argp, envp)
                     : ::posix_spawn(&pid, program.c_str(), &actions, &attr, argp, envp);
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return Error::unavailable("cannot run " + program + ": " + std::strerror(rc));
  return pid;
}

}  // namespace

Result<Child> spawn_program(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                            const std::string& stdin_text, const std::string& private_dev_shm) {
  if (argv.empty()) return Error::invalid("spawn_program: empty command");
  std::string program = argv[0];
  if (!private_dev_shm.empty()) {
    auto resolved = resolve_program(argv[0]);
    if (!resolved) return resolved.error();
    program = std::move(*resolved);
  }
  int in[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return Error::internal(errno_text("pipe2"));
  std::vector<std::string> args = argv;
  std::vector<std::string> envs = merged_environment(env);
  auto argp = pointers(args);
  auto envp = pointers(envs);
  auto pid = private_dev_shm.empty() ? spawn_plainly(program, argp.data(), envp.data(), in[0])
                                     : fork_with_private_shm(program, argp.data(), envp.data(), in[0], private_dev_shm);
  ::close(in[0]);
  if (!pid) {
    ::close(in[1]);
    return pid.error();
  }
  Child child;
  child.pid = *pid;
  child.name = argv[0];
  // Our unreaped child: its pid cannot be reused before we wait for it, so this pidfd is its own.
  if (auto fd = open_pidfd(*pid); fd) child.pidfd.reset(*fd);
  write_ignoring_sigpipe(in[1], stdin_text);
  ::close(in[1]);
  return child;
}

Result<int> finish_program(Child& child, Deadline deadline, int cancel_fd) {
  if (child.pid <= 0) return Error::invalid("finish_program: no child");
  bool exited = true;
  bool cancelled = false;
  if (child.pidfd.valid()) {
    exited = wait_readable_until(child.pidfd.get(), deadline, cancel_fd);
    cancelled = !exited && cancel_fd >= 0 && wait_readable(cancel_fd, std::chrono::milliseconds(0));
    if (!exited) signal_pidfd(child.pidfd.get(), SIGKILL);
  }
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  child.pid = -1;
  child.pidfd.reset();
  if (cancelled) return Error::unavailable(child.name + " stopped: shutting down");
  if (!exited) return Error::unavailable(child.name + " did not finish in time");
  return exit_code(status);
}

Result<int> run_program(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                        const std::string& stdin_text, std::chrono::milliseconds timeout, int cancel_fd,
                        const std::string& private_dev_shm) {
  auto child = spawn_program(argv, env, stdin_text, private_dev_shm);
  if (!child) return child.error();
  auto rc = finish_program(*child, std::chrono::steady_clock::now() + timeout, cancel_fd);
  if (!rc && rc.error().message.ends_with("did not finish in time"))
    return Error::unavailable(argv[0] + " did not finish within " + std::to_string(timeout.count()) + " ms");
  return rc;
}

}  // namespace kgpu::mps
