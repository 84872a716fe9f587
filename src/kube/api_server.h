#pragma once
// Where the Kubernetes API server is and how to authenticate, for the pod's own service account.
#include <map>
#include <string>

#include "core/result.h"

namespace kgpu::kube {

struct ApiServer {
  std::string base_url;    // "https://10.96.0.1:443"
  std::string token;       // bearer token as read at start-up; empty: none
  std::string ca_file;     // CA bundle to verify the server; empty: no TLS or system CAs
  // Where `token` came from. Projected service-account tokens are rotated by the kubelet (they
  // expire after about an hour), so every request re-reads this file, as client-go does; empty:
  // `token` is fixed (KGPU_KUBE_TOKEN).
  std::string token_file;
};

inline constexpr const char* kServiceAccountDir = "/var/run/secrets/kubernetes.io/serviceaccount";
// A service-account token is a JWT of a few KiB; anything larger is not a token.
inline constexpr size_t kMaxTokenBytes = 64 * 1024;

// In a pod: KUBERNETES_SERVICE_HOST / _PORT plus the service account's token and ca.crt under
// `service_account_dir`. KGPU_KUBE_API (a base URL, e.g. "http://127.0.0.1:8001" for
// `kubectl proxy` or tests) overrides the address, with KGPU_KUBE_TOKEN as optional token.
// Error naming what is missing.
Result<ApiServer> find_api_server(const std::map<std::string, std::string>& env,
                                  const std::string& service_account_dir = kServiceAccountDir);

// Reads a token file: a regular file of at most kMaxTokenBytes (never blocks on a FIFO), trailing
// whitespace removed. Error naming the file when it is missing, empty, too large or not a file.
Result<std::string> read_token_file(const std::string& path);

}  // namespace kgpu::kube
