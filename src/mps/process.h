#pragma once
// Small process helpers for the MPS supervisor: run a program with extra environment and optional
// stdin text and wait for it with a deadline, and watch any process (not only children) through a
// pidfd so that supervision is event-driven (poll), never periodic.
#include <chrono>
#include <map>
#include <string>
#include <vector>

#include "core/result.h"

namespace kgpu::mps {

// Runs argv[0] (PATH lookup when it has no '/') with the current environment plus `env`, feeds
// `stdin_text` on its stdin (keep it below a pipe buffer, 64 KiB, or the write itself may wait on a
// child that never reads), and waits at most `timeout`. Returns the exit status (0–255; 128+N when
// killed by signal N). A program that outlives the timeout is killed and reported as Unavailable.
Result<int> run_program(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
                        const std::string& stdin_text, std::chrono::milliseconds timeout);

// A pidfd for `pid` (readable once the process exits), or an error (e.g. the process is gone).
Result<int> open_pidfd(int pid);

// Waits until `fd` is readable or the timeout passes; true when readable.
bool wait_readable(int fd, std::chrono::milliseconds timeout);

}  // namespace kgpu::mps
