#pragma once
// Where the Kubernetes API server is and how to authenticate, for the pod's own service account.
#include <map>
#include <string>

#include "core/result.h"

namespace kgpu::kube {

struct ApiServer {
  std::string base_url;  // "https://10.96.0.1:443"
  std::string token;     // bearer token; empty: none
  std::string ca_file;   // CA bundle to verify the server; empty: no TLS or system CAs
};

inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";

// In a pod: KUBERNETES_SERVICE_HOST / _PORT plus the service account's token and ca.crt under
// `service_account_dir`. KGPU_KUBE_API (a base URL, e.g. "http://127.0.0.1:8001" for
// `kubectl proxy` or tests) overrides the address, with KGPU_KUBE_TOKEN as optional token.
// Error naming what is missing.
Result<ApiServer> find_api_server(const std::map<std::string, std::string>& env,
                                  const std::string& service_account_dir = kServiceAccountDir);

}  // namespace kgpu::kube
