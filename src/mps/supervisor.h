#pragma once
// MpsSupervisor: starts one `nvidia-cuda-mps-control -d` per MPS resource, sets its default limits
// through the control pipe, writes the readiness marker the plugin waits for, restarts a daemon
// that dies (exponential backoff), and on stop sends `quit` to each. Event-driven: it sleeps in
// poll() on the daemons' pidfds and the stop fd, waking only for a death, a due restart or stop.
#include <chrono>
#include <string>
#include <vector>

#include "core/result.h"
#include "mps/daemon_spec.h"

namespace kgpu {

struct MpsSupervisorOptions {
  std::string control_binary = "nvidia-cuda-mps-control";
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{30000};
  std::chrono::milliseconds command_timeout{10000};  // one control-client invocation
  std::chrono::milliseconds stop_timeout{5000};      // `quit` → exit, before SIGKILL
};

class MpsSupervisor {
 public:
  MpsSupervisor(std::vector<MpsDaemonSpec> specs, MpsSupervisorOptions options);
  ~MpsSupervisor();
  MpsSupervisor(const MpsSupervisor&) = delete;
  MpsSupervisor& operator=(const MpsSupervisor&) = delete;

  // Runs until `stop_fd` becomes readable (a signalfd for SIGTERM, or a pipe in tests), then stops
  // every daemon and removes the readiness markers. A daemon that cannot start is retried with
  // backoff rather than failing the whole run, so one bad resource never stops the others.
  Status run(int stop_fd);

 private:
  struct Daemon {
    MpsDaemonSpec spec;
    int pid = -1;
    int pidfd = -1;
    int failures = 0;
    std::chrono::steady_clock::time_point started;
    std::chrono::steady_clock::time_point next_start;
    bool running() const { return pidfd >= 0; }
  };

  Status start(Daemon& d);
  void stop(Daemon& d);
  void schedule_restart(Daemon& d);

  std::vector<Daemon> daemons_;
  MpsSupervisorOptions options_;
};

}  // namespace kgpu
