#pragma once
// Steps a KubeletSim runs for `kgpu kubelet-sim` and `kgpu demo`, and the printing of what a
// container receives. Shared by both commands.
#include <chrono>
#include <ostream>
#include <string>
#include <vector>

#include "core/container_edits.h"
#include "core/result.h"
#include "sim/kubelet_sim.h"

namespace kgpu::sim {

// Runs each step (see kubelet_sim.cpp for the language); stops at the first failure or `exit`.
Status run_sim_steps(KubeletSim& sim, const std::vector<std::string>& steps, std::chrono::milliseconds timeout,
                     std::ostream& out);

// "    env    NVIDIA_VISIBLE_DEVICES=GPU-..." lines for every edit, indented by `indent`.
void print_edits(const ContainerEdits& edits, std::ostream& out, const std::string& indent = "    ");

// Simulates a kubelet restart and waits until every resource registered before is streaming
// again. Returns the time from the restart to the last re-registration.
Result<std::chrono::microseconds> restart_and_wait(KubeletSim& sim, std::chrono::milliseconds timeout);

}  // namespace kgpu::sim
