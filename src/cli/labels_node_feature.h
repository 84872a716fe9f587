#pragma once
// `kgpu labels` with flags.useNodeFeatureAPI (GFD_USE_NODE_FEATURE_API): the labels go to the
// node's NodeFeature object through the API server (kube/node_feature.h) instead of the feature
// file, as GFD v0.17+ writes them. The API server and the object's place come from the environment
// (NODE_NAME, NAMESPACE, POD_NAME, the pod's service account or KGPU_KUBE_API).
#include <functional>
#include <map>
#include <string>

#include "core/result.h"

namespace kgpu::cli {

// kgpu::Labels (labels/labels.h), spelled out: that header before config/loader.h trips -Wshadow
// on FlagScope::Labels.
using LabelMap = std::map<std::string, std::string>;

// --daemon: publishes next_labels() each round until next_round() returns false (SIGTERM), then
// deletes the object unless keep_on_exit. An API server that fails is logged and retried on the
// sync's thread while the rounds go on; an Error from next_labels() ends the daemon (exit 1), as
// does an environment without what the API needs. The caller blocks the signals first (the sync's
// thread inherits the mask). `when` says how often, for the start-up line.
int run_node_feature_daemon(const std::function<Result<LabelMap>()>& next_labels,
                            const std::function<bool()>& next_round, bool keep_on_exit, const std::string& when);

// One pass (GFD's --oneshot): the object written once; 0, or 1 with the reason on stderr.
int write_node_feature_once(const LabelMap& labels);

}  // namespace kgpu::cli
