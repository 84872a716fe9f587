#pragma once
// Per-node configuration as NVIDIA's chart does it: the node label nvidia.com/device-plugin.config
// names one of the config files mounted from a ConfigMap; without the label the default is used.
// kgpu reads the label itself (no sidecar). Pure: the caller supplies labels and a file check.
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace kgpu::kube {

struct NodeConfigSource {
  std::string node_name;     // NODE_NAME (downward API)
  std::string label;         // KGPU_NODE_CONFIG_LABEL, e.g. "nvidia.com/device-plugin.config"
  std::string config_dir;    // KGPU_CONFIG_DIR, where the ConfigMap's keys are files
  std::string default_name;  // KGPU_CONFIG_DEFAULT; empty: no default
  bool operator==(const NodeConfigSource&) const = default;
};

// Present when NODE_NAME, KGPU_CONFIG_DIR and KGPU_NODE_CONFIG_LABEL are all set (the Helm chart
// sets them when it mounts several configs).
std::optional<NodeConfigSource> node_config_source(const std::map<std::string, std::string>& env);

struct NodeConfigChoice {
  std::string file;     // full path; empty: no config file at all
  std::string reason;   // for the log: which label value (or the default) chose it
  bool problem = false; // the label named a config that does not exist: fell back to the default
  bool operator==(const NodeConfigChoice&) const = default;
};

NodeConfigChoice choose_node_config(const std::map<std::string, std::string>& labels, const NodeConfigSource& source,
                                    const std::function<bool(const std::string&)>& file_exists);

}  // namespace kgpu::kube
