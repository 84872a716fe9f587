#include "plan/mps_paths.h"

namespace kgpu {

namespace {
std::string join(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  return a.back() == '/' ? a + b : a + "/" + b;
}
}  // namespace

std::string mps_resource_dir(const std::string& mps_root, const std::string& resource) {
  return join(mps_root, resource);
}
std::string mps_pipe_dir(const std::string& mps_root, const std::string& resource) {
  return mps_resource_dir(mps_root, resource) + "/pipe";
}
std::string mps_log_dir(const std::string& mps_root, const std::string& resource) {
  return mps_resource_dir(mps_root, resource) + "/log";
}
std::string mps_ready_marker(const std::string& mps_root, const std::string& resource) {
  return mps_resource_dir(mps_root, resource) + "/.ready";
}
std::string mps_shm_dir(const std::string& mps_root) { return join(mps_root, "shm"); }
std::string mps_container_pipe_dir(const std::string& resource) { return "/mps/" + resource + "/pipe"; }

}  // namespace kgpu
