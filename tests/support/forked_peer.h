#pragma once
// A peer in a process of its own, so that SO_PEERCRED tells it from the test process (which plays
// the kubelet in-process). The child runs `body(report, control)`: it writes what it wants the
// test to know to `report`, and `control` reaches EOF when the test is done with it (the
// destructor closes it; PR_SET_PDEATHSIG covers a test that dies). Only raw syscalls and plain
// C++ in the body: it runs in a fork of a process with threads.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <string>

namespace kgpu::test {

class ForkedPeer {
 public:
  using Body = std::function<void(int report, int control)>;

  explicit ForkedPeer(const Body& body) {
    int report[2], control[2];
    if (::pipe2(report, O_CLOEXEC) != 0) return;
    if (::pipe2(control, O_CLOEXEC) != 0) {
      ::close(report[0]);
      ::close(report[1]);
      return;
    }
    pid_ = ::fork();
    if (pid_ == 0) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      ::close(report[0]);
      ::close(control[1]);
      body(report[1], control[0]);
      ::_exit(0);
    }
    ::close(report[1]);
    ::close(control[0]);
    report_ = report[0];
    control_ = control[1];
  }
  ~ForkedPeer() {
    if (control_ >= 0) ::close(control_);
    if (pid_ > 0) {
      // The child ends at EOF on `control`; a stuck one is killed after 5 s.
      for (int i = 0; i < 500 && ::waitpid(pid_, nullptr, WNOHANG) == 0; ++i) {
        pollfd p{report_, POLLHUP, 0};
        ::poll(&p, 1, 10);
      }
      if (::waitpid(pid_, nullptr, WNOHANG) == 0) {
        ::kill(pid_, SIGKILL);
        ::waitpid(pid_, nullptr, 0);
      }
    }
    if (report_ >= 0) ::close(report_);
  }
  ForkedPeer(const ForkedPeer&) = delete;
  ForkedPeer& operator=(const ForkedPeer&) = delete;

  bool started() const { return pid_ > 0; }
  pid_t pid() const { return pid_; }

  // What the child reported so far, reading until `want` bytes are in or `timeout` passes.
  const std::string& reports(size_t want, std::chrono::milliseconds timeout) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (received_.size() < want) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      if (left.count() <= 0) break;
      pollfd p{report_, POLLIN, 0};
      if (::poll(&p, 1, static_cast<int>(left.count())) <= 0) continue;
      char buf[256];
      ssize_t n = ::read(report_, buf, sizeof buf);
      if (n <= 0) break;
      received_.append(buf, static_cast<size_t>(n));
    }
    return received_;
  }

  // In the child: blocks until the test closes `control`.
  static void wait_for_end(int control) {
    char c;
    while (::read(control, &c, 1) > 0) {
    }
  }

 private:
  pid_t pid_ = -1;
  int report_ = -1;
  int control_ = -1;
  std::string received_;
};

}  // namespace kgpu::test
