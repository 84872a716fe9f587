#include "cli/mps_config_source.h"

#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include <spdlog/spdlog.h>

#include "dra/api_share.h"
#include "mps/daemon_spec.h"
#include "nvml/discovery.h"
#include "nvml/nvml_library.h"
#include "plan/plan.h"

namespace kgpu::cli {

Result<std::vector<MpsDaemonSpec>> mps_resource_specs(const Config& config) {
  if (!config.mps || config.mps->resources.empty()) return std::vector<MpsDaemonSpec>{};
  if (config.mps_root.empty()) return Error::invalid("using MPS requires --mps-root to be specified");
  auto nvml = NvmlLibrary::load(config.driver_search_roots());
  if (!nvml) return nvml.error();
  NvidiaDiscoveryOptions options;
  options.sysfs_root = config.sysfs_root;
  options.proc_root = config.proc_root;
  options.dev_root = config.dev_root();
  auto inventory = discover_nvidia(**nvml, options);
  if (!inventory) return inventory.error();
  auto plan = kgpu::plan(config, *inventory);
  // The plugin's split between the two APIs: GPUs the DRA driver owns are no device-plugin MPS
  // resource's (their claims get daemons of their own), so their limits stay out of its daemon.
  if (config.dra.enabled)
    plan = config.dra.device_plugin ? dra::without_owned(std::move(plan), dra::dra_share(*inventory, config.dra).owned)
                                    : ResourcePlan{{}, std::move(plan.problems)};
  for (const auto& p : plan.problems) spdlog::warn("{}", p);
  return mps_daemon_specs(config, *inventory, plan);
}

Result<std::unique_ptr<MpsConfigSource>> MpsConfigSource::create(const ConfigFlags& flags) {
  const auto env = process_environment();
  auto selector = NodeConfigSelector::from_env(env);
  if (selector) selector->choose_now();
  auto loaded = load_config_for_node(flags, env, false, selector.get());
  if (!loaded) return loaded.error();
  std::unique_ptr<MpsConfigSource> source(new MpsConfigSource(flags, loaded->config, std::move(selector)));
  if (!source->epoll_.valid() || !source->label_changed_.valid())
    return Error::unavailable(std::string("cannot watch the config: ") + std::strerror(errno));
  source->watch_file(source->config_.config_file);
  if (source->selector_) {
    const int fd = source->label_changed_.get();
    source->selector_->start([fd] {  // on the selector's thread: only wake the supervisor
      const uint64_t one = 1;
      [[maybe_unused]] auto n = ::write(fd, &one, sizeof one);
    });
  }
  return source;
}

MpsConfigSource::MpsConfigSource(ConfigFlags flags, Config config, std::unique_ptr<NodeConfigSelector> selector)
    : flags_(std::move(flags)),
      config_(std::move(config)),
      selector_(std::move(selector)),
      epoll_(::epoll_create1(EPOLL_CLOEXEC)),
      label_changed_(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) {
  epoll_event event{};
  event.events = EPOLLIN;
  if (epoll_.valid() && label_changed_.valid())
    ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, label_changed_.get(), &event);
}

MpsConfigSource::~MpsConfigSource() {
  if (selector_) selector_->stop();  // joins its thread before the eventfd closes
}

void MpsConfigSource::watch_file(const std::string& path) {
  if (file_) ::epoll_ctl(epoll_.get(), EPOLL_CTL_DEL, file_->fd(), nullptr);
  file_.reset();
  if (path.empty()) return;
  auto watcher = server::ConfigFileWatcher::open(path);
  if (!watcher) {
    spdlog::warn("mps-daemon: config changes will need a SIGHUP: {}", watcher.error().message);
    return;
  }
  file_.emplace(std::move(*watcher));
  epoll_event event{};
  event.events = EPOLLIN;
  ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, file_->fd(), &event);
}

bool MpsConfigSource::reload() {
  uint64_t count = 0;
  const bool label = ::read(label_changed_.get(), &count, sizeof count) == sizeof count;
  const bool file = file_ && file_->changed();
  if (!label && !file) return false;
  auto loaded = load_config_for_node(flags_, process_environment(), false, selector_.get());
  if (!loaded) {
    spdlog::error("mps-daemon: the changed config is invalid; the MPS daemons keep running as they are: {}",
                  loaded.error().message);
    return false;
  }
  if (loaded->config.config_file != config_.config_file) watch_file(loaded->config.config_file);
  config_ = std::move(loaded->config);
  spdlog::info("mps-daemon: the {} changed; re-planning the MPS resources", label ? "Node's config label" : "config file");
  return true;
}

std::optional<std::vector<MpsDaemonSpec>> MpsConfigSource::wanted() {
  const bool first = !planned_;
  planned_ = true;
  if (!reload() && !first) return std::nullopt;
  auto specs = mps_resource_specs(config_);
  if (!specs) {
    spdlog::error("mps-daemon: {}", specs.error().message);
    return first ? std::optional(std::vector<MpsDaemonSpec>{}) : std::nullopt;
  }
  if (specs->empty()) spdlog::info("mps-daemon: the config shares no resource through MPS");
  return std::move(*specs);
}

}  // namespace kgpu::cli
