#pragma once
// kgpu as the kubelet's DRA plugin: the plugin watcher's Registration service on
// <kubelet root>/plugins_registry/<driver>-reg.sock (GetInfo: type DRAPlugin, the driver name, the
// DRA socket, the services spoken) and the DRA node service on <kubelet root>/plugins/<driver>/dra.sock
// in both versions kubelets speak today (v1 from 1.34, v1beta1 for 1.32 and 1.33).
//
// The kubelet finds the registration socket by watching its folder, at its own start too, so a
// kubelet restart needs nothing from us. Prepare and unprepare may wait on the API server,
// nvidia-smi or an MPS daemon, so they never run on the transport's thread: each call is split
// into one task per claim on a ClaimCalls pool (dra/claim_calls.h). Tasks of one claim UID run one
// at a time in arrival order; different claims run in parallel, a call that needs no API round trip
// (an unprepare, a repeated prepare) in a lane of its own and prepares that read the API server
// shared fairly between namespaces, so a claim that hangs delays only later calls for that claim,
// never another claim's prepare or unprepare. A call is answered once each of its claims is done; a claim that could not start
// within the call's budget (below the kubelet's 45 s deadline), or whose caller has gone (the
// kubelet cancelled or timed out), is answered with an error without running (the kubelet calls
// again). The pool's threads exist only while claims are queued or running: the first call starts
// one and each ends when no claim is ready, so an idle daemon has no thread for them.
#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"
#include "dra/claims/claim_calls.h"
#include "dra/claims/claim_handler.h"  // ClaimHandler
#include "dra/model/claim.h"    // ClaimRef
#include "dra/sharing/prepare.h"  // PreparedDevice

namespace kgpu::rpc {
class Server;
class ServerStream;
}

namespace kgpu::dra {

struct KubeletPluginOptions {
  std::string driver = "gpu.nvidia.com";
  std::string kubelet_root = "/var/lib/kubelet";
  // Called (on the transport's thread; must not block) each time the kubelet confirms the
  // registration: after a kubelet restart it may have dropped the node's ResourceSlices.
  std::function<void()> on_registered;
  // Claims handled at once (threads of the pool, each started on demand, ending when idle): those
  // that read the API server, and those that need no API round trip (claim_calls.h).
  size_t claim_threads = 8;
  size_t local_claim_threads = 8;
  // From a call's arrival until its last claim may start; below the kubelet's 45 s deadline.
  std::chrono::milliseconds call_budget{40'000};
  // Set: the DRA socket also serves v1alpha1.DRAResourceHealth (KEP-4680) and GetInfo advertises
  // it; each NodeWatchResources call is handed over (on the transport's thread; must not block;
  // dra/health/health_streams.h). Unset: neither.
  std::function<void(std::shared_ptr<rpc::ServerStream>)> health_watch{};
};

// The service names GetInfo announces, in the order of preference (kubelet 1.34+ takes the first
// it knows; 1.32 and 1.33 look for v1beta1).
inline const std::vector<std::string> kDraServiceVersions = {"v1.DRAPlugin", "v1beta1.DRAPlugin"};
// Advertised after them when the health service is served, as the Go helper
// (k8s.io/dynamic-resource-allocation/kubeletplugin) does: kubelets pick their DRA service from the
// list and skip names they do not know; those with ResourceHealthStatus open the stream on every
// registered plugin (and get UNIMPLEMENTED from a plugin without it).
inline const std::string kDraHealthService = "v1alpha1.DRAResourceHealth";

class KubeletPlugin {
 public:
  KubeletPlugin(KubeletPluginOptions options, ClaimHandler handler, std::shared_ptr<rpc::Server> transport);
  ~KubeletPlugin();  // stop()
  KubeletPlugin(const KubeletPlugin&) = delete;
  KubeletPlugin& operator=(const KubeletPlugin&) = delete;

  // Serves the DRA socket first, then the registration socket (the kubelet may call as soon as
  // the latter appears). Error naming the path that could not be served.
  Status start();
  // Removes the registration socket first (the kubelet deregisters), then the DRA socket; claims
  // still queued are answered "stopping" without running, and the running ones are awaited (the
  // daemon has already ended what they wait on).
  void stop();

  std::string registration_socket() const;
  std::string dra_socket() const;
  // What the kubelet said in its last NotifyRegistrationStatus: empty while it has said nothing
  // or registered us, its error otherwise.
  bool registered() const;
  std::string registration_error() const;

 private:
  KubeletPluginOptions options_;
  ClaimHandler handler_;
  std::shared_ptr<rpc::Server> transport_;
  uint64_t dra_listener_ = 0, registration_listener_ = 0;
  // A call of many claims was answered: the claim threads trim the heap once all idle (calls_'
  // when_idle). Declared before calls_, whose threads use it.
  std::atomic<bool> trim_when_idle_{false};
  ClaimCalls calls_;

  mutable std::mutex mu_;
  bool registered_ = false;
  std::string registration_error_;
};

}  // namespace kgpu::dra
