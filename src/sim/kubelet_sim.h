#pragma once
// KubeletSim: an in-process stand-in for the kubelet's device manager, for tests, the demo, the
// benchmarks and `kgpu kubelet-sim`. It serves v1beta1.Registration on <dir>/kubelet.sock; on
// Register it dials <dir>/<endpoint>, calls GetDevicePluginOptions and keeps ListAndWatch open,
// recording every snapshot. Allocate / GetPreferredAllocation are issued on request. restart()
// behaves like a kubelet restart: every socket in the directory is deleted and kubelet.sock is
// recreated, so plugins must notice and register again. It also serves the PodResources API
// (<dir>/../pod-resources/kubelet.sock) for the pods started with run_pod().
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/container_edits.h"
#include "core/result.h"

namespace kgpu::sim {

struct SimDevice {
  std::string id;
  std::string health;               // "Healthy" / "Unhealthy", as sent
  std::vector<int64_t> numa_nodes;  // from TopologyInfo
  bool operator==(const SimDevice&) const = default;
};

// What the simulated kubelet knows about one resource.
struct ResourceState {
  std::string resource;
  std::string endpoint;             // socket file name from the last Register
  bool pre_start_required = false;
  bool preferred_allocation_available = false;
  std::vector<SimDevice> devices;   // last ListAndWatch snapshot
  int updates = 0;                  // ListAndWatch messages received (all registrations)
  int registrations = 0;            // Register calls accepted for this resource
  bool connected = false;           // ListAndWatch stream currently open
  std::chrono::steady_clock::time_point last_registered{};
  std::chrono::steady_clock::time_point last_update{};

  size_t healthy_count() const;
  std::vector<std::string> device_ids() const;
  std::vector<std::string> healthy_ids() const;
};

struct Snapshot {
  std::map<std::string, ResourceState> resources;
  int registrations = 0;  // total Register calls accepted
  int restarts = 0;       // restart() calls
  std::chrono::steady_clock::time_point last_restart{};

  const ResourceState* find(const std::string& resource) const;
  // True when `resource` is registered, streaming, and has at least `min_updates` updates.
  bool ready(const std::string& resource, int min_updates = 1) const;
};

struct SimEvent {
  enum class Kind { Registered, Update, StreamEnded, Restarted, Error };
  Kind kind = Kind::Error;
  std::string resource;
  std::string message;   // human-readable one-liner
};
const char* to_string(SimEvent::Kind kind);

class KubeletSim {
 public:
  // `dir` is the device-plugin directory (it must exist). Nothing happens until start().
  explicit KubeletSim(std::string dir);
  ~KubeletSim();  // stop()
  KubeletSim(const KubeletSim&) = delete;
  KubeletSim& operator=(const KubeletSim&) = delete;

  // Serves Registration on <dir>/kubelet.sock. Error when the socket cannot be created.
  Status start();
  // Closes every stream and the registration server, removes kubelet.sock.
  void stop();

  const std::string& dir() const;
  std::string socket_path() const;

  // The `:authority` sent when dialing a plugin; set before start(). Empty (the default): the
  // plugin's socket path, as kubelets 1.19-1.25 send it (grpc-go dials the bare path and puts the
  // target there); "localhost": as kubelets since 1.26 send it (grpc.WithAuthority).
  void set_authority(std::string authority);

  // Called (from gRPC / stream threads) for every event; set before start().
  void on_event(std::function<void(const SimEvent&)> callback);

  Snapshot snapshot() const;
  // Blocks until pred(snapshot) is true or the timeout passes; returns the last pred value.
  bool wait_for(const std::function<bool(const Snapshot&)>& pred, std::chrono::milliseconds timeout) const;

  // One Allocate call with one container request. gRPC errors map to Error codes
  // (INVALID_ARGUMENT -> InvalidArgument, UNAVAILABLE -> Unavailable, ...), message kept.
  Result<ContainerEdits> allocate(const std::string& resource, const std::vector<std::string>& ids);
  // One Allocate call carrying several container requests.
  Result<std::vector<ContainerEdits>> allocate_containers(const std::string& resource,
                                                          const std::vector<std::vector<std::string>>& containers);
  Result<std::vector<std::string>> preferred(const std::string& resource, const std::vector<std::string>& available,
                                             const std::vector<std::string>& must_include, int size);
  Status pre_start(const std::string& resource, const std::vector<std::string>& ids);

  // PodResources (v1 List) socket, served from start() to stop(): the kubelet root next to `dir`.
  std::string pod_resources_socket() const;
  // A pod with one container getting `ids` of `resource`: Allocate, then the pod is listed by
  // PodResources until delete_pod().
  Result<ContainerEdits> run_pod(const std::string& pod_namespace, const std::string& name,
                                 const std::string& resource, const std::vector<std::string>& ids);
  void delete_pod(const std::string& pod_namespace, const std::string& name);

  // Simulates a kubelet restart: forgets streams, deletes every socket in dir (plugins' too),
  // recreates kubelet.sock. Registration counts are kept so callers can wait for new ones.
  Status restart();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace kgpu::sim
