#pragma once
// Creates a plugin's unix socket without ever exposing it with the umask's mode: gRPC binds it
// inside a private folder (mode 0700) next to the final path, we set mode 0600 there, and only
// then rename it into place. Each step reports its exact failure (the device-plugin directory
// missing, a directory at the socket path, a path too long), which gRPC's BuildAndStart does not.
#include <string>

#include "core/result.h"

namespace kgpu::server {

class SocketStaging {
 public:
  // Makes the private folder in `dir`. Error (with the reason) when `dir` is missing or unusable.
  static Result<SocketStaging> create(const std::string& dir);
  ~SocketStaging();  // removes the folder (and a socket left in it)
  SocketStaging(SocketStaging&& other) noexcept;
  SocketStaging& operator=(SocketStaging&&) = delete;
  SocketStaging(const SocketStaging&) = delete;

  // Where to bind: a short path inside the private folder.
  std::string bind_path() const { return folder_ + "/s"; }
  // chmod 0600, then renames the bound socket to `final_path` (replacing a stale socket or file).
  Status publish(const std::string& final_path);

 private:
  explicit SocketStaging(std::string folder) : folder_(std::move(folder)) {}
  std::string folder_;
};

// Shuts down (both directions) every connection this process accepted on the unix socket bound
// at `bound_path`; returns how many. gRPC's server cannot stop while a write is blocked on a
// peer that stopped reading its socket (it waits for the write to finish before it closes the
// connection, forever); a shut-down socket fails that write at once. The bound path is unique
// per serving period (the private folder's random name), so no other server's connections match.
size_t shut_down_connections(const std::string& bound_path);

// Error (InvalidArgument) when `path` does not fit in sockaddr_un::sun_path.
Status check_socket_path(const std::string& path);

}  // namespace kgpu::server
