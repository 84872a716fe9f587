#pragma once
// MpsSupervisor: starts one `nvidia-cuda-mps-control -d` per MPS resource, sets its default limits
// through the control pipe, writes the readiness marker the plugin waits for, restarts a daemon
// that dies (exponential backoff), and on stop sends `quit` to each. Event-driven: it sleeps in
// poll() on the daemons' pidfds, the stop fd and an optional SIGCHLD fd, waking only for a death, a
// due restart or stop.
//
// Processes: the supervisor makes itself a child subreaper, so a control daemon that forks into
// the background is reparented to it. The PID the daemon writes into the pipe folder (which every
// MPS client mounts read-write) is only trusted once a pidfd for it names a child of ours; the
// daemon is then signalled through that pidfd alone. Every exited child (reparented MPS servers
// included) is reaped, which matters when this runs as PID 1 of its container.
//
// Readiness: the marker is removed before a start and written only once the daemon runs with its
// limits, with an exclusive flock held for as long as the supervisor tracks that daemon: when the
// supervisor dies (even by SIGKILL) the kernel drops the lock, and mps_ready() treats a marker
// nobody locks as stale.
//
// Sources (mps/daemon_source.h): besides the daemons it is built with, the supervisor follows
// sources whose wanted daemons change while it runs (the config's resources, DRA claims): a new
// spec starts its daemon, a changed one restarts it, a vanished one quits it (and, for a claim,
// removes the claim's folder); the others keep running untouched. At start, what a source's
// leftovers() names (a claim unprepared while no supervisor ran) is swept: its daemon quit through
// its control pipe, its shared memory unmounted, its folder removed. A daemon's failed start also
// writes the reason into its failure note when it has one (claims), for the prepare waiting on it.
//
// Shared memory: a claim's daemon gets its own size-limited tmpfs (mps/claim_shm.h), mounted
// before its start and seen at /dev/shm by every control call of that daemon (a mount namespace per
// call); it outlives a supervisor restart and goes with the claim's folder.
//
// Stopping: every control call also watches the stop fd, so SIGTERM interrupts a start at once;
// at stop the `quit` of every daemon is sent at once and all of them share one stop_timeout, after
// which the daemons left are killed.
#include <chrono>
#include <list>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"
#include "mps/daemon_source.h"
#include "mps/daemon_spec.h"

namespace kgpu {

struct MpsSupervisorOptions {
  std::string control_binary = "nvidia-cuda-mps-control";
  std::chrono::milliseconds initial_backoff{1000};
  std::chrono::milliseconds max_backoff{30000};
  std::chrono::milliseconds command_timeout{10000};  // one control-client invocation
  std::chrono::milliseconds stop_timeout{5000};      // `quit` of every daemon → exit, before SIGKILL
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
  // `child_fd` (optional; a non-blocking signalfd for SIGCHLD) wakes the loop to reap exited
  // children. `sources` add the daemons they want, followed as they change. An internal failure
  // (poll) still stops every daemon before it is returned.
  Status run(int stop_fd, int child_fd = -1, const std::vector<MpsDaemonSource*>& sources = {});

 private:
  struct Daemon {
    MpsDaemonSpec spec;
    int pid = -1;
    UniqueFd pidfd;        // the control daemon, a child of ours
    UniqueFd marker_lock;  // holds the flock on the readiness marker while ready
    MpsDaemonSource* source = nullptr;  // null: one of the daemons the supervisor was built with
    int failures = 0;
    std::chrono::steady_clock::time_point started;
    std::chrono::steady_clock::time_point next_start;
    bool running() const { return pidfd.valid(); }
  };

  Status start(Daemon& d, int stop_fd);
  void quit_leftover(const MpsDaemonSpec& spec, int stop_fd);
  void sweep(const MpsDaemonSource& source, int stop_fd);  // its leftovers(), at start
  void forget(Daemon& d);
  void stop_daemons(const std::vector<Daemon*>& which);
  void schedule_restart(Daemon& d);
  void try_start(Daemon& d, int stop_fd);
  void follow(MpsDaemonSource& source, int stop_fd);

  // A list: follow adds and removes daemons while others are referred to by address.
  std::list<Daemon> daemons_;
  MpsSupervisorOptions options_;
};

}  // namespace kgpu
