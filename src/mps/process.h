#pragma once
// Small process helpers for the MPS supervisor: run a program with extra environment and optional
// stdin text and wait for it with a deadline (and a cancel fd), and track processes through pidfds
// so that supervision is event-driven (poll), never periodic, and a signal only ever reaches the
// very process a pidfd was opened for (never a pid read from a file, which may have been reused
// or planted).
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"

namespace kgpu::mps {

using Deadline = std::chrono::steady_clock::time_point;

// A child started by spawn_program: its pid stays ours until finish_program reaps it.
struct Child {
  int pid = -1;
  UniqueFd pidfd;  // readable once the child exits
  std::string name;
};

// Starts argv[0] (PATH lookup when it has no '/') with the current environment plus `env`, with
// no blocked signals and default dispositions, and feeds `stdin_text` on its stdin (keep it below
// a pipe buffer, 64 KiB, or the write itself may wait on a child that never reads).
// `private_dev_shm` (when not empty): the program runs in a mount namespace of its own, where that
// folder is bind-mounted at /dev/shm (a DRA claim's MPS daemon shares shared memory with the
// claim's containers only). Needs CAP_SYS_ADMIN; a failure is returned with its reason.
Result<Child> spawn_program(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                            const std::string& stdin_text, const std::string& private_dev_shm = "");

// Waits until the child exits, `deadline` passes or `cancel_fd` (when >= 0) becomes readable; in
// the last two cases the child is killed (through its pidfd). Always reaps it. Returns the exit
// status (0–255; 128+N when killed by signal N); Unavailable at the deadline or when cancelled
// (then the message says "stopped").
Result<int> finish_program(Child& child, Deadline deadline, int cancel_fd = -1);

// spawn_program + finish_program with `timeout`.
Result<int> run_program(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                        const std::string& stdin_text, std::chrono::milliseconds timeout, int cancel_fd = -1,
                        const std::string& private_dev_shm = "");

// A pidfd for `pid` (readable once the process exits), or an error (e.g. the process is gone).
Result<int> open_pidfd(int pid);

// True when `pidfd` names a child of this process (after a reparenting, too: see
// become_subreaper) that has not been reaped: only then may it be signalled or waited for.
bool is_own_child(int pidfd);

// True when `pidfd` (opened for `pid`) names a child of ours or a live descendant of ours (a
// daemonising program whose intermediate process has not exited yet; once it has, the daemon is
// reparented to us as the subreaper). Never true for an unrelated process.
bool is_own_descendant(int pid, int pidfd);

// Reaps the child behind `pidfd` if it has exited (no-op for a running child or a non-child).
void reap_pidfd(int pidfd);

// Sends `sig` to exactly the process behind `pidfd` (pidfd_send_signal); false if it is gone.
bool signal_pidfd(int pidfd, int sig);

// Makes this process the reaper of its orphaned descendants (PR_SET_CHILD_SUBREAPER), so that a
// daemon that forks into the background stays our child and can be tracked and reaped.
Status become_subreaper();

// Reaps every exited child without blocking; returns how many.
int reap_exited_children();

// Waits until `fd` is readable or the timeout passes; true when readable.
bool wait_readable(int fd, std::chrono::milliseconds timeout);
// Waits until `fd` or `cancel_fd` (when >= 0) is readable or the deadline passes; true only when
// `fd` is readable.
bool wait_readable_until(int fd, Deadline deadline, int cancel_fd = -1);

}  // namespace kgpu::mps
