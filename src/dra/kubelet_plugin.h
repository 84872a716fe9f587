#pragma once
// kgpu as the kubelet's DRA plugin: the plugin watcher's Registration service on
// <kubelet root>/plugins_registry/<driver>-reg.sock (GetInfo: type DRAPlugin, the driver name, the
// DRA socket, the services spoken) and the DRA node service on <kubelet root>/plugins/<driver>/dra.sock
// in both versions kubelets speak today (v1 from 1.34, v1beta1 for 1.32 and 1.33).
//
// The kubelet finds the registration socket by watching its folder, at its own start too, so a
// kubelet restart needs nothing from us. Prepare and unprepare may wait on the API server, so they
// run on a worker thread of their own, one at a time in arrival order (the kubelet serializes them
// per driver anyway), never on the transport's thread. The worker exists only while calls are
// queued or running: the first call starts it and it ends when the queue is empty, so an idle
// daemon has no thread for it.
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"
#include "dra/claim.h"    // ClaimRef
#include "dra/prepare.h"  // PreparedDevice

namespace kgpu::rpc {
class Server;
}

namespace kgpu::dra {

// What the plugin asks of the rest of kgpu; both thread-safe and idempotent.
struct ClaimHandler {
  std::function<Result<std::vector<PreparedDevice>>(const ClaimRef&)> prepare;
  std::function<Status(const ClaimRef&)> unprepare;
};

struct KubeletPluginOptions {
  std::string driver = "gpu.nvidia.com";
  std::string kubelet_root = "/var/lib/kubelet";
  // Called (on the transport's thread; must not block) each time the kubelet confirms the
  // registration: after a kubelet restart it may have dropped the node's ResourceSlices.
  std::function<void()> on_registered;
};

// The service names GetInfo announces, in the order of preference (kubelet 1.34+ takes the first
// it knows; 1.32 and 1.33 look for v1beta1).
inline const std::vector<std::string> kDraServiceVersions = {"v1.DRAPlugin", "v1beta1.DRAPlugin"};

class KubeletPlugin {
 public:
  KubeletPlugin(KubeletPluginOptions options, ClaimHandler handler, std::shared_ptr<rpc::Server> transport);
  ~KubeletPlugin();  // stop()
  KubeletPlugin(const KubeletPlugin&) = delete;
  KubeletPlugin& operator=(const KubeletPlugin&) = delete;

  // Serves the DRA socket first, then the registration socket (the kubelet may call as soon as
  // the latter appears). Error naming the path that could not be served.
  Status start();
  // Removes the registration socket first (the kubelet deregisters), then the DRA socket.
  void stop();

  std::string registration_socket() const;
  std::string dra_socket() const;
  // What the kubelet said in its last NotifyRegistrationStatus: empty while it has said nothing
  // or registered us, its error otherwise.
  bool registered() const;
  std::string registration_error() const;

 private:
  struct Job;
  void run_jobs();
  // Queues the job and starts the worker when none runs; while stopping, the job is refused.
  void post(Job job);

  KubeletPluginOptions options_;
  ClaimHandler handler_;
  std::shared_ptr<rpc::Server> transport_;
  uint64_t dra_listener_ = 0, registration_listener_ = 0;

  mutable std::mutex mu_;
  std::deque<std::function<void()>> jobs_;
  bool stopping_ = false;
  bool worker_running_ = false;  // worker_ is in run_jobs(); false once it has left (joinable, ending)
  std::thread worker_;
  bool registered_ = false;
  std::string registration_error_;
};

}  // namespace kgpu::dra
