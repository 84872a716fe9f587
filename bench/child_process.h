#pragma once
// A process spawned for the end-to-end benchmarks (spawn_logged) with a pidfd opened at once, so
// that its exit is seen the moment it happens; killed and reaped by the destructor if still running.
#include <poll.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <vector>

#include "spawn_logged.h"

namespace kgpu::bench {

class Child {
 public:
  Child(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env, const std::string& log) {
    pid_ = spawn_logged(argv, extra_env, log);
    if (pid_ > 0) pidfd_ = static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0));
  }
  ~Child() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
    if (pidfd_ >= 0) ::close(pidfd_);
  }
  Child(const Child&) = delete;
  Child& operator=(const Child&) = delete;

  pid_t pid() const { return pid_; }
  bool started() const { return pid_ > 0 && pidfd_ >= 0; }

  // Waits for the exit (SIGKILL after `timeout`); the exit status, or 128 + signal, or -1 when killed.
  int wait_exit(std::chrono::milliseconds timeout) {
    pollfd p{pidfd_, POLLIN, 0};
    ::poll(&p, 1, static_cast<int>(timeout.count()));
    int st = 0;
    if (::waitpid(pid_, &st, WNOHANG) != pid_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, &st, 0);
      pid_ = -1;
      return -1;
    }
    pid_ = -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
  }

 private:
  pid_t pid_ = -1;
  int pidfd_ = -1;
};

}  // namespace kgpu::bench
