#include "mps/process.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <pthread.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

extern char** environ;

namespace kgpu::mps {

namespace {

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

}  // namespace

bool wait_readable(int fd, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    pollfd p{fd, POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(std::max<int64_t>(left.count(), 0)));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) return false;
  }
}

Result<int> open_pidfd(int pid) {
  const long fd = ::syscall(SYS_pidfd_open, pid, 0);
  if (fd < 0) return Error::unavailable(errno_text("pidfd_open(" + std::to_string(pid) + ")"));
  return static_cast<int>(fd);
}

Result<int> run_program(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                        const std::string& stdin_text, std::chrono::milliseconds timeout) {
  if (argv.empty()) return Error::invalid("run_program: empty command");
  int in[2];
  if (::pipe2(in, O_CLOEXEC) != 0) return Error::internal(errno_text("pipe2"));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, in[0], STDIN_FILENO);
  std::vector<std::string> args = argv;
  std::vector<std::string> envs = merged_environment(env);
  auto argp = pointers(args);
  auto envp = pointers(envs);
  // Children start with no blocked signals and default dispositions: the caller may block SIGTERM
  // etc. for its signalfd, and a daemon inheriting that mask could not be stopped by `quit`.
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  sigset_t empty, defaults;
  sigemptyset(&empty);
  sigemptyset(&defaults);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGPIPE, SIGCHLD}) sigaddset(&defaults, sig);
  posix_spawnattr_setsigmask(&attr, &empty);
  posix_spawnattr_setsigdefault(&attr, &defaults);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  pid_t pid = -1;
  const int rc = argv[0].find('/') == std::string::npos
                     ? ::posix_spawnp(&pid, argv[0].c_str(), &actions, &attr, argp.data(), envp.data())
                     : ::posix_spawn(&pid, argv[0].c_str(), &actions, &attr, argp.data(), envp.data());
  posix_spawnattr_destroy(&attr);
  posix_spawn_file_actions_destroy(&actions);
  ::close(in[0]);
  if (rc != 0) {
    ::close(in[1]);
    return Error::unavailable("cannot run " + argv[0] + ": " + std::strerror(rc));
  }
  write_ignoring_sigpipe(in[1], stdin_text);
  ::close(in[1]);

  auto pidfd = open_pidfd(pid);
  bool exited = true;
  if (pidfd) {
    exited = wait_readable(*pidfd, timeout);
    ::close(*pidfd);
  }
  if (!exited) ::kill(pid, SIGKILL);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (!exited) return Error::unavailable(argv[0] + " did not finish within " + std::to_string(timeout.count()) + " ms");
  return exit_code(status);
}

}  // namespace kgpu::mps
