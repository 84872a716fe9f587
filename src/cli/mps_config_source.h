#pragma once
// The config's MPS resources as a daemon source of `kgpu mps-daemon` (mps/daemon_source.h): planned
// at start, and again whenever the config file's content changes (a ConfigMap update, watched as
// the plugin watches it) or the Node's config label selects another file (per-node configs), so
// the MPS daemons follow the same config the plugin serves without a pod restart. A re-plan that
// gives the same daemons leaves them running; one that fails (bad config, NVML gone) is logged
// and changes nothing.
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cli/node_config_selector.h"
#include "config/loader.h"
#include "core/unique_fd.h"
#include "mps/daemon_source.h"
#include "server/config_file_watcher.h"

namespace kgpu::cli {

class MpsConfigSource : public MpsDaemonSource {
 public:
  // Loads the config once (with the Node's label, when per-node configs are set up) and starts the
  // label watch. Error: the config cannot be loaded (the caller waits for a signal).
  static Result<std::unique_ptr<MpsConfigSource>> create(const ConfigFlags& flags);
  ~MpsConfigSource() override;

  std::string name() const override { return "the config"; }
  int fd() const override { return epoll_.get(); }
  std::optional<std::vector<MpsDaemonSpec>> wanted() override;

  const Config& config() const { return config_; }  // as last loaded

 private:
  MpsConfigSource(ConfigFlags flags, Config config, std::unique_ptr<NodeConfigSelector> selector);
  bool reload();                      // true: config_ was replaced
  void watch_file(const std::string& path);

  ConfigFlags flags_;
  Config config_;
  std::unique_ptr<NodeConfigSelector> selector_;
  UniqueFd epoll_;         // the two below, so the supervisor polls one fd
  UniqueFd label_changed_; // eventfd the selector's watch thread writes
  std::optional<server::ConfigFileWatcher> file_;
  bool planned_ = false;   // wanted() has answered once
};

// The daemons `config`'s MPS resources need: NVML discovery, then the plan's MPS resources.
Result<std::vector<MpsDaemonSpec>> mps_resource_specs(const Config& config);

}  // namespace kgpu::cli
