#pragma once
// GPU Feature Discovery's NodeFeature output (flags.useNodeFeatureAPI): one
// nfd.k8s-sigs.io/v1alpha1 NodeFeature object per node, which node-feature-discovery's master
// turns into Node labels. The pure parts: where the object lives, the object kgpu writes, and
// reading the one the API server holds (so that it is replaced only when it differs).
//
// As GFD (v0.17+) writes it: named "nvidia-features-for-<node>" in the daemon's namespace;
// metadata.labels carries nfd.node.kubernetes.io/node-name=<node> (NFD's master finds a node's
// objects by that label, and ignores objects without it); spec.labels holds the node labels and
// spec.features is empty (flags, attributes, instances); its owners are the pod's DaemonSet (as
// controller) and the pod, so that Kubernetes' garbage collector removes it with the DaemonSet.
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/result.h"

namespace kgpu::kube {

inline constexpr const char* kNodeFeatureApiVersion = "nfd.k8s-sigs.io/v1alpha1";
inline constexpr const char* kNodeFeatureKind = "NodeFeature";
inline constexpr const char* kNodeFeatureNodeLabel = "nfd.node.kubernetes.io/node-name";
// A NodeFeature with a few dozen labels is a few KiB; anything near this is not one kgpu wrote.
inline constexpr size_t kMaxNodeFeatureBytes = 1024 * 1024;

// One entry of metadata.ownerReferences.
struct OwnerRef {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string uid;
  bool controller = false;
  bool operator==(const OwnerRef&) const = default;
};

// Where the node's NodeFeature lives and whom it describes.
struct NodeFeaturePlace {
  std::string ns;    // the daemon's namespace
  std::string node;  // the node's name (NODE_NAME)
  std::string name() const { return "nvidia-features-for-" + node; }
  std::string collection_path() const;  // /apis/nfd.k8s-sigs.io/v1alpha1/namespaces/<ns>/nodefeatures
  std::string path() const;             // collection_path() + "/<name>"
  std::string describe() const { return "NodeFeature " + ns + "/" + name(); }
};

// Checks that the namespace is a DNS label and the object's name a DNS subdomain (the node name
// goes into it); Error saying which is wrong.
Status check_node_feature_place(const NodeFeaturePlace& place);

// The whole object as kgpu creates it (no resourceVersion).
nlohmann::json node_feature_object(const NodeFeaturePlace& place, const std::map<std::string, std::string>& labels,
                                   const std::vector<OwnerRef>& owners);

// What the API server holds, as far as kgpu writes it.
struct NodeFeatureState {
  std::string resource_version;
  std::string node_label;                     // metadata.labels[nfd.node.kubernetes.io/node-name]
  std::map<std::string, std::string> labels;  // spec.labels
  std::vector<OwnerRef> owners;
  bool features_empty = true;  // spec.features holds no feature (kgpu writes none)
  nlohmann::json object;       // the whole object, for an update that keeps what others added
};

// A NodeFeature object (JSON), from a GET. Error when it is not JSON, not a NodeFeature, or a field
// kgpu reads has the wrong type.
Result<NodeFeatureState> parse_node_feature(std::string_view text);

// Whether `state` already says what kgpu would write.
bool node_feature_matches(const NodeFeatureState& state, const NodeFeaturePlace& place,
                          const std::map<std::string, std::string>& labels, const std::vector<OwnerRef>& owners);

// The body of the update (PUT): the stored object with its resourceVersion (a conflict if someone
// wrote in between), annotations and other labels kept, and kgpu's parts replaced.
nlohmann::json node_feature_update(const NodeFeatureState& state, const NodeFeaturePlace& place,
                                   const std::map<std::string, std::string>& labels,
                                   const std::vector<OwnerRef>& owners);

// The owners GFD gives the object, from the daemon's own Pod (JSON, from a GET): the DaemonSet that
// controls the pod (controller: true), then the pod itself; only the pod when no DaemonSet owns it.
// Error when it is not JSON, not a Pod, or the pod's name or uid is missing.
Result<std::vector<OwnerRef>> owners_from_pod(std::string_view text);

}  // namespace kgpu::kube
