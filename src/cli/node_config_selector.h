#pragma once
// Per-node config for `kgpu plugin`: when the Helm chart mounts several configs, the Node label
// (nvidia.com/device-plugin.config) picks the file. Chosen once at start-up (a GET of the Node) and
// again whenever the label changes (a watch), which triggers a config reload of the daemon.
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "config/loader.h"
#include "core/result.h"
#include "kube/node_config.h"
#include "kube/node_watcher.h"

namespace kgpu::cli {

class NodeConfigSelector {
 public:
  // Null when the per-node environment (NODE_NAME, KGPU_CONFIG_DIR, KGPU_NODE_CONFIG_LABEL) is not
  // set, or the API server cannot be located (logged).
  static std::unique_ptr<NodeConfigSelector> from_env(const std::map<std::string, std::string>& env);

  // Reads the Node once and returns the config file its label selects; nullopt when the Node
  // cannot be read (logged; the daemon starts on the default and switches once the watch works).
  std::optional<std::string> choose_now();
  // Starts the watch; `changed` runs on the watcher's thread after the choice changed.
  void start(std::function<void()> changed);
  void stop();
  // The file to load, when one was chosen.
  std::optional<std::string> current() const;
  // The file and where the choice came from (for --print-config and `kgpu devices`, e.g.
  // "Node label of node n1: nvidia.com/device-plugin.config=big"), read together.
  struct Choice {
    std::string file;
    std::string origin;
  };
  std::optional<Choice> current_choice() const;

 private:
  NodeConfigSelector(kube::NodeConfigSource source, kube::ApiServer api);
  bool choose(const kube::NodeWatcher::Labels& labels);  // true: the choice changed

  kube::NodeConfigSource source_;
  kube::NodeWatcher watcher_;
  kube::NodeSnapshot first_;
  mutable std::mutex mu_;
  std::optional<std::string> current_;
  std::string origin_;
};

// The config as `kgpu plugin` loads it: `flags` and `env`, with the config file replaced by the
// selector's current choice (when it made one) and origins["configFile"] naming that choice.
Result<LoadedConfig> load_config_for_node(const ConfigFlags& flags, const std::map<std::string, std::string>& env,
                                          bool strict, const NodeConfigSelector* selector);

// IMEX channels (plan/imex.h): keeps in loaded.config only the configured channels that exist as
// character devices now; a missing one is a warning in loaded.diagnostics, or with imex.required
// the Error. load_config_for_node calls it, so the daemon (start and every reload) and the one-shot
// subcommands agree.
Status resolve_imex_channels(LoadedConfig& loaded);

// For one-shot subcommands (devices, probe, labels, cdi generate): reads the Node once, like the
// daemon does at start-up, so that they show the config the daemon serves, not the default.
Result<LoadedConfig> load_config_as_daemon(const ConfigFlags& flags, bool strict);

}  // namespace kgpu::cli
