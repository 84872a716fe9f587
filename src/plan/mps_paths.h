#pragma once
// Where MPS lives on the host and in containers. One place, because the planner (Allocate mounts),
// the MPS daemon and the plugin's readiness check must agree on every path.
// Host layout under mpsRoot (NVIDIA's, plus our readiness marker):
//   <mpsRoot>/<resource>/pipe   control pipe directory (CUDA_MPS_PIPE_DIRECTORY)
//   <mpsRoot>/<resource>/log    log directory (CUDA_MPS_LOG_DIRECTORY)
//   <mpsRoot>/<resource>/.ready written by `kgpu mps-daemon` once the daemon runs with its limits
//   <mpsRoot>/shm               tmpfs shared with clients, mounted at /dev/shm
#include <string>

namespace kgpu {

std::string mps_resource_dir(const std::string& mps_root, const std::string& resource);
std::string mps_pipe_dir(const std::string& mps_root, const std::string& resource);
std::string mps_log_dir(const std::string& mps_root, const std::string& resource);
std::string mps_ready_marker(const std::string& mps_root, const std::string& resource);
std::string mps_shm_dir(const std::string& mps_root);
// The pipe directory as a container sees it: /mps/<resource>/pipe.
std::string mps_container_pipe_dir(const std::string& resource);

}  // namespace kgpu
