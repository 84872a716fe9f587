#pragma once
// Writes the node's NodeFeature object (kube/node_feature.h) through the API server, as GFD does:
// GET it; create it when missing; replace it (PUT with the resourceVersion read) when it differs;
// leave it alone when it says the same already. Every failure comes back as an Error that says
// what to do about it: RBAC for a 403, node-feature-discovery's CRD for a 404 on create, and so on.
// Blocking (each request bounded by the deadline and by the ApiClient's Interrupter); one thread.
#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "kube/api_request.h"
#include "kube/api_server.h"
#include "kube/node_feature.h"

namespace kgpu::kube {

struct NodeFeatureSettings {
  NodeFeaturePlace place;
  std::string pod;  // the daemon's Pod (POD_NAME), whose DaemonSet owns the object; empty: the Node does
};

// GFD's environment: NODE_NAME (required), NAMESPACE (else the service account's namespace, else
// "default", as GFD), POD_NAME (optional). Error naming what is missing or invalid.
Result<NodeFeatureSettings> node_feature_settings(const std::map<std::string, std::string>& env,
                                                  const std::string& service_account_dir = kServiceAccountDir);

class NodeFeatureClient {
 public:
  NodeFeatureClient(const ApiClient& api, NodeFeatureSettings settings,
                    std::chrono::milliseconds deadline = std::chrono::seconds(10));

  enum class Outcome { Created, Updated, Unchanged };
  struct Written {
    Outcome outcome = Outcome::Unchanged;
    std::map<std::string, std::string> before;  // spec.labels before an update (for the log)
  };
  // Makes the object hold `labels`.
  Result<Written> write(const std::map<std::string, std::string>& labels);
  // Deletes the object; false when there was none.
  Result<bool> remove();

  const NodeFeaturePlace& place() const { return settings_.place; }

 private:
  // The object's owners, looked up at the first write that gets that far and then kept: the pod's
  // DaemonSet and the pod; the Node when there is no pod name or the pod cannot be read (403, 404);
  // none when the Node cannot be read either (logged). An Error (retried) for a transient failure.
  Result<std::vector<OwnerRef>> owners();
  Result<std::optional<std::vector<OwnerRef>>> pod_owners();
  Result<std::vector<OwnerRef>> node_owner();

  const ApiClient& api_;
  NodeFeatureSettings settings_;
  std::chrono::milliseconds deadline_;
  std::optional<std::vector<OwnerRef>> owners_;
};

}  // namespace kgpu::kube
