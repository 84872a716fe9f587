#pragma once
// ResourceServer: serves ONE resource of the current plan as a v1beta1.DevicePlugin on a unix
// socket <plugin dir>/kgpu-<resource, '/' -> '-'>.sock (mode 0600), on kgpu's own gRPC transport
// (src/rpc): every resource of the daemon is served by one thread. It reads an immutable
// ServingState snapshot; the daemon swaps in new snapshots with update(), which pushes
// ListAndWatch only when asked to.
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/result.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "server/server_events.h"
#include "server/serving_state.h"
#include "server/socket_staging.h"  // check_socket_path

namespace kgpu::rpc {
class Server;
}

namespace kgpu::server {

class WatchHub;
class DevicePluginService;

// "nvidia.com/gpu" -> "kgpu-nvidia.com-gpu.sock".
std::string socket_file_name(const std::string& resource);

// The ListAndWatch message for one resource of a plan (empty list if the plan lacks it).
std::shared_ptr<const v1beta1::ListAndWatchResponse> device_list(const ResourcePlan& plan, const std::string& resource);

struct ServerCounters {
  std::atomic<uint64_t> allocations{0};
  std::atomic<uint64_t> allocation_errors{0};
  std::atomic<uint64_t> preferred_calls{0};
  std::atomic<uint64_t> list_and_watch_updates{0};
  std::atomic<uint64_t> list_and_watch_opened{0};  // streams a kubelet opened (the daemon checks it follows a Register)
};

class ResourceServer {
 public:
  // `events` (may be null) hears about every Allocate / GetPreferredAllocation answered. `rpc`:
  // the transport to serve on; null: the process-wide one (started on first use).
  ResourceServer(std::string resource, std::string plugin_dir, StatePtr state,
                 std::shared_ptr<ServerEvents> events = nullptr, std::shared_ptr<rpc::Server> rpc = nullptr);
  ~ResourceServer();  // stop()
  ResourceServer(const ResourceServer&) = delete;
  ResourceServer& operator=(const ResourceServer&) = delete;

  // Creates the socket and serves. Error when the path is too long or the socket cannot be bound.
  Status start();
  // Ends ListAndWatch streams, closes the socket's connections, removes the socket. Never waits
  // for a peer. Idempotent.
  void stop();
  // stop() + start(): after the kubelet deleted our socket.
  Status restart();
  bool serving() const;

  // Swaps in a new snapshot. push: send the new device list to every ListAndWatch stream.
  void update(StatePtr state, bool push);

  const std::string& resource() const { return resource_; }
  std::string endpoint() const { return socket_file_name(resource_); }  // file name, for Register
  std::string socket_path() const { return plugin_dir_ + "/" + endpoint(); }
  size_t open_streams() const;
  // ListAndWatch streams the kubelet itself holds now (other local peers' are not counted): the
  // transport knows the kubelet from registration (rpc::Server::set_kubelet).
  size_t kubelet_streams() const;
  const ServerCounters& counters() const { return *counters_; }
  // Runs (on the transport's thread) each time a kubelet opens ListAndWatch.
  void on_list_and_watch(std::function<void()> observer);

 private:
  std::string resource_;
  std::string plugin_dir_;
  std::shared_ptr<ServerCounters> counters_;
  std::shared_ptr<WatchHub> hub_;
  std::shared_ptr<DevicePluginService> service_;  // holds the snapshot; lives across restarts
  std::shared_ptr<rpc::Server> rpc_;
  uint64_t listener_ = 0;  // 0: not serving
  mutable std::mutex mu_;  // guards listener_, hub_
};

}  // namespace kgpu::server
