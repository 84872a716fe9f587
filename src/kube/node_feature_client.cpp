#include "kube/node_feature_client.h"

#include <spdlog/spdlog.h>

#include "core/safe_file.h"
#include "kube/node_capacity.h"
#include "kube/node_object.h"
#include "kube/watch_loop.h"

namespace kgpu::kube {
namespace {

constexpr size_t kMaxPodBytes = 4 * 1024 * 1024;  // a Pod with many containers and a long status
constexpr size_t kMaxNodeBytes = 4 * 1024 * 1024;
constexpr int kConflictRetries = 3;                // someone else writing the same object

std::string env_or(const std::map<std::string, std::string>& env, const char* name) {
  auto it = env.find(name);
  return it == env.end() ? std::string() : it->second;
}

std::string rbac(const NodeFeaturePlace& place) {
  return "get, create, update and delete on nodefeatures.nfd.k8s-sigs.io in namespace " + place.ns +
         " (kgpu's chart grants them with gfd.useNodeFeatureAPI: true)";
}

}  // namespace

Result<NodeFeatureSettings> node_feature_settings(const std::map<std::string, std::string>& env,
                                                  const std::string& service_account_dir) {
  NodeFeatureSettings settings;
  settings.place.node = env_or(env, "NODE_NAME");
  if (settings.place.node.empty())
    return Error::invalid("flags.useNodeFeatureAPI needs the node's name in NODE_NAME (the chart sets it from "
                          "spec.nodeName)");
  settings.place.ns = env_or(env, "NAMESPACE");
  if (settings.place.ns.empty()) {
    // In a pod without NAMESPACE: the service account's own namespace; elsewhere GFD's default.
    auto read = read_regular_file(service_account_dir + "/namespace", 256);
    settings.place.ns = read ? *read : "default";
    while (!settings.place.ns.empty() && (settings.place.ns.back() == '\n' || settings.place.ns.back() == ' '))
      settings.place.ns.pop_back();
  }
  if (auto checked = check_node_feature_place(settings.place); !checked) return checked.error();
  settings.pod = env_or(env, "POD_NAME");
  if (!settings.pod.empty())
    if (auto pod = check_node_name(settings.pod); !pod)
      return Error::invalid("POD_NAME \"" + settings.pod + "\" is not a pod name");
  return settings;
}

NodeFeatureClient::NodeFeatureClient(const ApiClient& api, NodeFeatureSettings settings,
                                     std::chrono::milliseconds deadline)
    : api_(api), settings_(std::move(settings)), deadline_(deadline) {}

Result<std::optional<std::vector<OwnerRef>>> NodeFeatureClient::pod_owners() {
  const std::string path = "/api/v1/namespaces/" + settings_.place.ns + "/pods/" + settings_.pod;
  auto answer = api_.get(path, deadline_, kMaxPodBytes);
  if (!answer) return Error::unavailable("GET " + path + ": " + answer.error().message);
  if (answer->status == 403 || answer->status == 404) {
    spdlog::warn("labels: cannot read Pod {}/{} for the NodeFeature's owners ({}); the Node owns it instead, so it "
                 "is not removed with the DaemonSet",
                 settings_.place.ns, settings_.pod,
                 answer->status == 403 ? "RBAC: the service account needs get on pods in its namespace"
                                       : "no such pod: is POD_NAME the pod's metadata.name?");
    return std::optional<std::vector<OwnerRef>>();
  }
  if (answer->status != 200) return Error::unavailable(api_status_problem("GET " + path, *answer, "get on pods"));
  auto owners = owners_from_pod(answer->body);
  if (!owners) return Error::unavailable("GET " + path + ": " + owners.error().message);
  return std::optional<std::vector<OwnerRef>>(std::move(*owners));
}

Result<std::vector<OwnerRef>> NodeFeatureClient::node_owner() {
  const std::string path = "/api/v1/nodes/" + settings_.place.node;
  auto answer = api_.get(path, deadline_, kMaxNodeBytes);
  if (!answer) return Error::unavailable("GET " + path + ": " + answer.error().message);
  if (answer->status == 403 || answer->status == 404) {
    spdlog::warn("labels: cannot read Node {} ({}); the NodeFeature is written without an owner (node-feature-"
                 "discovery's garbage collector removes it when the node goes)",
                 settings_.place.node, answer->status == 403 ? "RBAC: get on nodes" : "no such node");
    return std::vector<OwnerRef>{};
  }
  if (answer->status != 200) return Error::unavailable(api_status_problem("GET " + path, *answer, "get on nodes"));
  auto node = parse_node(answer->body);
  if (!node) return Error::unavailable("GET " + path + ": " + node.error().message);
  if (node->uid.empty()) return Error::unavailable("GET " + path + ": the Node has no metadata.uid");
  return std::vector<OwnerRef>{{"v1", "Node", settings_.place.node, node->uid, false}};
}

Result<std::vector<OwnerRef>> NodeFeatureClient::owners() {
  if (owners_) return *owners_;
  if (!settings_.pod.empty()) {
    auto from_pod = pod_owners();
    if (!from_pod) return from_pod.error();
    if (*from_pod) return *(owners_ = std::move(**from_pod));
  }
  auto node = node_owner();
  if (!node) return node.error();
  return *(owners_ = std::move(*node));
}

Result<NodeFeatureClient::Written> NodeFeatureClient::write(const std::map<std::string, std::string>& labels) {
  const NodeFeaturePlace& place = settings_.place;
  const std::string path = place.path();
  for (int attempt = 0; attempt < kConflictRetries; ++attempt) {
    auto owners = this->owners();
    if (!owners) return owners.error();
    auto answer = api_.get(path, deadline_, kMaxNodeFeatureBytes);
    if (!answer) return Error::unavailable("GET " + path + ": " + answer.error().message);
    if (answer->status == 404) {
      // Missing (or no such resource at all: then the create below says so).
      const std::string body = node_feature_object(place, labels, *owners).dump();
      const std::string collection = place.collection_path();
      auto created = api_.post(collection, body, deadline_, kMaxNodeFeatureBytes);
      if (!created) return Error::unavailable("POST " + collection + ": " + created.error().message);
      if (created->status == 200 || created->status == 201) return Written{Outcome::Created, {}};
      if (created->status == 409) continue;  // created by someone else meanwhile: read it
      if (created->status == 404)
        return Error::not_found(api_status_problem("POST " + collection, *created, rbac(place)) +
                                " (the API server serves no nodefeatures.nfd.k8s-sigs.io/v1alpha1: install "
                                "node-feature-discovery with its CRDs, or check that namespace " +
                                place.ns + " exists)");
      if (created->status == 422)
        return Error::invalid(api_status_problem("POST " + collection, *created, rbac(place)) +
                              " (the API server refused the object kgpu wrote)");
      return Error::unavailable(api_status_problem("POST " + collection, *created, rbac(place)));
    }
    if (answer->status != 200) return Error::unavailable(api_status_problem("GET " + path, *answer, rbac(place)));
    auto state = parse_node_feature(answer->body);
    if (!state) return Error::unavailable("GET " + path + ": " + state.error().message);
    if (node_feature_matches(*state, place, labels, *owners)) return Written{Outcome::Unchanged, {}};
    const std::string body = node_feature_update(*state, place, labels, *owners).dump();
    auto updated = api_.put(path, body, deadline_, kMaxNodeFeatureBytes);
    if (!updated) return Error::unavailable("PUT " + path + ": " + updated.error().message);
    if (updated->status == 200 || updated->status == 201) return Written{Outcome::Updated, std::move(state->labels)};
    if (updated->status == 409 || updated->status == 404) continue;  // changed or deleted meanwhile: again
    if (updated->status == 422)
      return Error::invalid(api_status_problem("PUT " + path, *updated, rbac(place)) +
                            " (the API server refused the object kgpu wrote)");
    return Error::unavailable(api_status_problem("PUT " + path, *updated, rbac(place)));
  }
  return Error::unavailable(path + ": another writer kept changing the object (" + std::to_string(kConflictRetries) +
                            " conflicts in a row)");
}

Result<bool> NodeFeatureClient::remove() {
  const std::string path = settings_.place.path();
  auto answer = api_.remove(path, "", deadline_, kMaxNodeFeatureBytes);
  if (!answer) return Error::unavailable("DELETE " + path + ": " + answer.error().message);
  if (answer->status == 200 || answer->status == 202) return true;
  if (answer->status == 404) return false;
  return Error::unavailable(api_status_problem("DELETE " + path, *answer, rbac(settings_.place)));
}

}  // namespace kgpu::kube
