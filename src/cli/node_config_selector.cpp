#include "cli/node_config_selector.h"

#include <sys/stat.h>

#include <chrono>

#include <spdlog/spdlog.h>

#include "plan/imex.h"

namespace kgpu::cli {

std::unique_ptr<NodeConfigSelector> NodeConfigSelector::from_env(const std::map<std::string, std::string>& env) {
  auto source = kube::node_config_source(env);
  if (!source) return nullptr;
  auto api = kube::find_api_server(env);
  if (!api) {
    spdlog::error("per-node config: cannot reach the API server ({}); every node uses the default config",
                  api.error().message);
    return nullptr;
  }
  return std::unique_ptr<NodeConfigSelector>(new NodeConfigSelector(*source, *api));
}

NodeConfigSelector::NodeConfigSelector(kube::NodeConfigSource source, kube::ApiServer api)
    : source_(std::move(source)), watcher_(std::move(api), source_.node_name) {}

bool NodeConfigSelector::choose(const kube::NodeWatcher::Labels& labels) {
  auto choice = kube::choose_node_config(labels, source_, [](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0;
  });
  if (choice.problem)
    spdlog::error("per-node config: {}", choice.reason);
  else
    spdlog::info("per-node config: {} -> {}", choice.reason, choice.file.empty() ? "no config file" : choice.file);
  std::lock_guard lock(mu_);
  origin_ = "Node label of node " + source_.node_name + ": " + choice.reason;
  if (current_ && *current_ == choice.file) return false;
  current_ = choice.file;
  return true;
}

std::optional<std::string> NodeConfigSelector::choose_now() {
  // A whole-exchange deadline: an API server answers a GET of one Node in milliseconds, and one
  // that stalls must not hold the node's GPUs back (the watch picks the label up later).
  auto node = watcher_.get_node(std::chrono::seconds(2));
  if (!node) {
    spdlog::warn("per-node config: {}; starting with the default config", node.error().message);
    return std::nullopt;
  }
  first_ = *node;
  choose(node->labels);
  return current();
}

void NodeConfigSelector::start(std::function<void()> changed) {
  watcher_.start(first_, [this, changed = std::move(changed)](const kube::NodeWatcher::Labels& labels) {
    if (choose(labels)) changed();
  });
}

void NodeConfigSelector::stop() { watcher_.stop(); }

std::optional<std::string> NodeConfigSelector::current() const {
  std::lock_guard lock(mu_);
  return current_;
}

std::optional<NodeConfigSelector::Choice> NodeConfigSelector::current_choice() const {
  std::lock_guard lock(mu_);
  if (!current_) return std::nullopt;
  return Choice{*current_, origin_};
}

Result<LoadedConfig> load_config_for_node(const ConfigFlags& flags, const std::map<std::string, std::string>& env,
                                          bool strict, const NodeConfigSelector* selector) {
  ConfigFlags effective = flags;
  const auto chosen = selector ? selector->current_choice() : std::nullopt;
  // The Node's choice beats --config-file and $CONFIG_FILE, as in the daemon; an empty choice (no
  // label and no default) loads no file at all.
  if (chosen) effective.set("configFile", "--config-file", chosen->file);
  auto loaded = load_config(effective, env, strict);
  if (loaded && chosen) loaded->origins["configFile"] = chosen->origin;
  if (loaded) {
    if (auto st = resolve_imex_channels(*loaded); !st) return st.error();
  }
  return loaded;
}

Status resolve_imex_channels(LoadedConfig& loaded) {
  auto found = find_imex_channels(loaded.config, [](const std::string& path) {
    struct stat st {};
    return ::stat(path.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
  });
  if (!found) return found.error();
  std::string where = loaded.origins["imex.channelIDs"];
  if (where == "file") where = loaded.config.config_file;
  for (const auto& w : found->warnings) loaded.diagnostics.push_back({Diagnostic::Severity::Warning, where, 0, 0, w});
  loaded.config.imex_channel_ids = std::move(found->present);
  return ok_status();
}

Result<LoadedConfig> load_config_as_daemon(const ConfigFlags& flags, bool strict) {
  const auto env = process_environment();
  auto selector = NodeConfigSelector::from_env(env);
  if (selector) selector->choose_now();
  return load_config_for_node(flags, env, strict, selector.get());
}

}  // namespace kgpu::cli
