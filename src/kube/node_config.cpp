#include "kube/node_config.h"

namespace kgpu::kube {

std::optional<NodeConfigSource> node_config_source(const std::map<std::string, std::string>& env) {
  auto get = [&](const char* name) {
    auto it = env.find(name);
    return it == env.end() ? std::string() : it->second;
  };
  NodeConfigSource s{get("NODE_NAME"), get("KGPU_NODE_CONFIG_LABEL"), get("KGPU_CONFIG_DIR"), get("KGPU_CONFIG_DEFAULT")};
  if (s.node_name.empty() || s.label.empty() || s.config_dir.empty()) return std::nullopt;
  return s;
}

NodeConfigChoice choose_node_config(const std::map<std::string, std::string>& labels, const NodeConfigSource& source,
                                    const std::function<bool(const std::string&)>& file_exists) {
  auto path_of = [&](const std::string& name) { return source.config_dir + "/" + name; };
  auto fallback = [&](std::string why, bool problem) {
    if (source.default_name.empty()) return NodeConfigChoice{"", why + "; no default config: built-in defaults", problem};
    return NodeConfigChoice{path_of(source.default_name), why + "; using the default config \"" + source.default_name + "\"",
                            problem};
  };
  auto it = labels.find(source.label);
  if (it == labels.end() || it->second.empty()) return fallback("node " + source.node_name + " has no " + source.label + " label", false);
  const std::string& name = it->second;
  // A label value is a ConfigMap key: never a path.
  if (name.find('/') != std::string::npos || name == "." || name == "..")
    return fallback(source.label + "=" + name + " is not a config name", true);
  if (!file_exists(path_of(name)))
    return fallback(source.label + "=" + name + " names no config in " + source.config_dir, true);
  return NodeConfigChoice{path_of(name), source.label + "=" + name, false};
}

}  // namespace kgpu::kube
