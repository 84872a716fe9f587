#pragma once
// What kgpu asks of the API server's resource.k8s.io group besides writing slices: which versions it
// serves, read once (GET /apis/resource.k8s.io) and shared by the slice publisher (the version its
// ResourceSlices are written in) and the claim reads (the version a ResourceClaim is read in), so a
// claim costs one GET, not one per version tried; and the ResourceClaim reads themselves.
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/result.h"
#include "kube/api_request.h"
#include "kube/api_server.h"

namespace kgpu::dra {

// The version kgpu reads ResourceClaims in, from the group's served versions: the newest of v1
// (Kubernetes 1.34+), v1beta2 (1.33) and v1beta1 (1.32) that is served; an error naming what is
// served otherwise. Pure.
Result<std::string> choose_claim_version(const std::vector<std::string>& served_versions);

// The API server's Kubernetes release (GET /version: {"major": "1", "minor": "34+", ...}).
struct KubernetesVersion {
  int major = 0;
  int minor = 0;
  bool at_least(int want_major, int want_minor) const {
    return major > want_major || (major == want_major && minor >= want_minor);
  }
};
// Parses a /version answer: "major" and "minor" (a trailing "+", as managed clusters add, is
// ignored), else "gitVersion" ("v1.35.0-gke.1"). An error names what is missing. Pure.
Result<KubernetesVersion> parse_kubernetes_version(const std::string& body);
// GET /version, bounded by `deadline`; errors name the request and the HTTP status.
Result<KubernetesVersion> read_kubernetes_version(const kube::ApiClient& client, std::chrono::milliseconds deadline);

// The served versions of resource.k8s.io, read once and kept; thread-safe. A failed read is not
// kept: the next caller reads again. A cluster upgraded under a running kgpu is seen at its next
// start (as the Kubernetes clients do with their cached discovery).
class ResourceApiDiscovery {
 public:
  // The served versions: at once when known, else one GET bounded by `deadline` (and by the
  // client's Interrupter). Errors name the request and the HTTP status (404: DRA is not enabled).
  Result<std::vector<std::string>> served(const kube::ApiClient& client, std::chrono::milliseconds deadline);
  // What is known without asking; nullopt until a read succeeded.
  std::optional<std::vector<std::string>> known() const;

 private:
  mutable std::mutex mu_;
  std::optional<std::vector<std::string>> served_;
};

// GET /apis/resource.k8s.io/<version>/namespaces/<ns>/resourceclaims/<name> in the version
// discovery found (one discovery per process, shared with the slice publisher). Thread-safe;
// every request is bounded by `deadline` and ended at once by `interrupter`.
class ClaimReader {
 public:
  ClaimReader(std::shared_ptr<ResourceApiDiscovery> discovery, kube::ApiServer server, kube::Interrupter& interrupter,
              std::chrono::milliseconds deadline = std::chrono::seconds(5));
  // The claim's JSON text; an error naming the claim and the HTTP status otherwise.
  Result<std::string> fetch(const std::string& ns, const std::string& name) const;

 private:
  std::shared_ptr<ResourceApiDiscovery> discovery_;
  kube::ApiClient client_;
  std::chrono::milliseconds deadline_;
};

}  // namespace kgpu::dra
