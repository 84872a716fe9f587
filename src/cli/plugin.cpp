// `kgpu plugin`: the node daemon. Loads the config (NVIDIA-compatible flags, env and file), then
// hands over to server::Daemon until SIGTERM/SIGINT.
#include <malloc.h>

#include <cstdlib>
#include <ctime>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>

#include <spdlog/spdlog.h>

#include "cli/command.h"
#include "config/config_changes.h"
#include "core/inotify_hub.h"
#include "config/loader.h"
#include "server/daemon.h"
#include "server/node_discovery.h"
#include "cli/node_config_selector.h"
#include "cli/dra_wiring.h"
#include "cli/held_gpu_guard.h"
#include "podresources/client.h"
#include "cli/plugin_wiring.h"
#include "cli/telemetry_wiring.h"
#include "metrics/metrics_server.h"
#include "metrics/plan_metrics.h"
#include "server/transport_metrics.h"
#include "mps/readiness.h"
#include "mps/readiness_watcher.h"

namespace {

struct PluginArgs {
  kgpu::ConfigFlags flags;
  bool print_config = false;
  bool strict = false;
};

void log_lines(spdlog::level::level_enum level, const std::string& text) {
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);)
    if (!line.empty()) spdlog::log(level, "{}", line);
}

// The effective configuration at start, one line per setting that is not at its default, with
// where its value came from (as --print-config shows it), so that an environment variable the
// chart sets over the ConfigMap shows in the log at once. Returns the lines, for later reloads.
std::vector<std::string> log_effective_config(const kgpu::LoadedConfig& loaded) {
  auto lines = kgpu::effective_config_lines(loaded);
  for (const auto& line : lines) spdlog::info("config (start): {}", line);
  if (lines.empty()) spdlog::info("config (start): every setting at its default");
  for (const auto& note : kgpu::describe_compatibility_only(loaded)) spdlog::warn("config (start): {}", note);
  return lines;
}

// A reload logs what changed since the configuration logged last, not the whole of it again.
void log_config_changes(const kgpu::LoadedConfig& loaded, std::vector<std::string>& shown) {
  auto lines = kgpu::effective_config_lines(loaded);
  const auto changes = kgpu::config_line_changes(shown, lines);
  for (const auto& change : changes) spdlog::info("config (reload): {}", change);
  if (changes.empty()) spdlog::info("config (reload): no setting changed");
  for (const auto& note : kgpu::describe_compatibility_only(loaded)) spdlog::warn("config (reload): {}", note);
  shown = std::move(lines);
}

int run_plugin(const PluginArgs& args) {
  // Large buffers (request messages, device lists) are mmapped and go back to the system when
  // freed: a burst of big requests or lists must not leave the daemon's RSS high for good (glibc
  // otherwise raises its mmap threshold after the first such free and keeps them in the heap).
  mallopt(M_MMAP_THRESHOLD, 256 * 1024);
  // Two malloc arenas, not glibc's 8 per core: the daemon's threads (gRPC's, the DRA claim workers,
  // the watchers) are seldom busy at once, and each arena keeps the memory its threads freed, so a
  // burst of 1,000 claims over 16 workers left most of it spread over 16 heaps (issue 40, item 3).
  mallopt(M_ARENA_MAX, 2);
  auto env = kgpu::process_environment();
  // Per-node config (Helm with several configs): the Node's label picks the file.
  auto node_config = kgpu::cli::NodeConfigSelector::from_env(env);
  if (node_config) node_config->choose_now();
  auto loaded = kgpu::cli::load_config_for_node(args.flags, env, args.strict, node_config.get());
  if (!loaded) {
    spdlog::error("invalid configuration:");
    log_lines(spdlog::level::err, loaded.error().message);
    return 1;
  }
  log_lines(spdlog::level::warn, kgpu::format_diagnostics(loaded->diagnostics));
  if (args.print_config) {
    std::cout << kgpu::describe_effective_config(*loaded);
    return 0;
  }
  // Only the daemon's loop runs reloads (one at a time), so the reload callback alone touches this.
  auto shown_config = std::make_shared<std::vector<std::string>>(log_effective_config(*loaded));
  // Before any thread exists, so that only the daemon's signalfd receives the signals.
  kgpu::server::Daemon::block_signals();
  const kgpu::Config& config = loaded->config;
  auto discovery = std::make_shared<kgpu::server::NodeDiscovery>();
  kgpu::server::DaemonOptions options;
  options.config = config;
  options.discover = [discovery](const kgpu::Config& c) { return discovery->discover(c); };
  options.reload_config = [&args, selector = node_config.get(), started_dra = config.dra,
                           shown_config]() -> kgpu::Result<kgpu::Config> {
    auto reloaded = kgpu::cli::load_config_for_node(args.flags, kgpu::process_environment(), args.strict, selector);
    if (!reloaded) return reloaded.error();
    log_lines(spdlog::level::warn, kgpu::format_diagnostics(reloaded->diagnostics));
    log_config_changes(*reloaded, *shown_config);
    // The DRA driver's sockets, slices and claim checkpoint are set up once; switching them live
    // could strand prepared claims, so a change waits for the next start (and says so).
    if (reloaded->config.dra != started_dra)
      spdlog::warn("kgpu.dra.* changed in the reloaded configuration; it takes effect when kgpu restarts");
    return reloaded->config;
  };
  // An MPS resource is advertised only once `kgpu mps-daemon` reports its control daemon ready;
  // GPUs that running pods hold under a previous config's IDs stay Unhealthy until the pods end.
  // Metrics first: the registry must exist before any server or the plan filter reports into it.
  kgpu::Metrics metrics(KGPU_VERSION);
  kgpu::cli::HeldGpuGuard held_gpus(kgpu::podresources::socket_for(config.kubelet_socket));
  options.plan_filter = [&held_gpus, &metrics](const kgpu::Config& c, kgpu::ResourcePlan plan) {
    // What is withheld, and why, goes to /readyz and /metrics: a probe that fails says what it waits for.
    std::map<std::string, std::string> withheld;
    plan = kgpu::withhold_unready_mps(std::move(plan), [&](const kgpu::Resource& r) {
      if (kgpu::mps_ready(c, r)) return true;
      withheld[r.name] = kgpu::mps_waiting_reason(c, r);
      return false;
    });
    metrics.set_withheld(std::move(withheld));
    return held_gpus.filter(std::move(plan));
  };

  // DRA: the GPUs it owns leave the device-plugin plan before anything is served.
  std::unique_ptr<kgpu::cli::DraWiring> dra;
  if (config.dra.enabled) {
    auto created = kgpu::cli::DraWiring::create(config, env);
    if (!created) {
      spdlog::error("{}", created.error().message);
      return 1;
    }
    dra = std::move(*created);
    options.api_share = dra->api_share();
    // A GPU a pod still holds stays with the device-plugin API; the guard's re-plans move it to
    // DRA once the pod is gone.
    dra->on_pod_holds([&held_gpus](bool holding) { held_gpus.keep_rechecking(holding); });
  }

  std::unique_ptr<kgpu::MetricsServer> metrics_server;
  if (!config.metrics_addr.empty()) {
    auto started = kgpu::MetricsServer::start(config.metrics_addr, metrics, [&metrics] { return metrics.not_ready_reason(); });
    if (!started) {
      spdlog::error("cannot serve metrics on {}: {}", config.metrics_addr, started.error().message);
      return 1;
    }
    metrics_server = std::move(*started);
    spdlog::info("metrics: serving /metrics, /healthz and /readyz on {}:{}", metrics_server->host(),
                 metrics_server->port());
    options.events = std::make_shared<kgpu::cli::MetricsEvents>(metrics);
  }
  auto telemetry = metrics_server ? kgpu::cli::TelemetryWiring::start(metrics, config, env) : nullptr;

  if (config.dra.enabled && !config.dra.device_plugin)
    spdlog::info("kgpu {} starting; DRA only (kgpu.dra.devicePlugin false: no device-plugin API)", KGPU_VERSION);
  else
    spdlog::info("kgpu {} starting; device-plugin directory {}", KGPU_VERSION,
                 kgpu::server::plugin_dir_of(options.config.kubelet_socket));
  // SIGTERM: every inotify watch of the process released at once, before the sockets go and while
  // fsnotify is idle, so that neither a stop path nor the exit waits on the kernel for them.
  options.on_shutdown = [] { kgpu::InotifyChannel::release_all(); };
  kgpu::server::Daemon daemon(std::move(options));
  kgpu::cli::HealthWiring health(daemon, discovery, metrics_server ? &metrics : nullptr);
  kgpu::cli::LabelsWriter labels(static_cast<int64_t>(std::time(nullptr)), env);
  kgpu::cli::CdiWriter cdi;
  kgpu::cli::SysfsHealthWatcher sysfs_health(daemon);
  // An MPS supervisor that stops or dies withdraws its resource (re-plan: mps_ready says no).
  kgpu::MpsReadinessWatcher mps_readiness(
      [&daemon] { daemon.update_inventory([](const kgpu::Inventory& i) { return i; }); });
  if (auto transport = daemon.transport(); metrics_server && transport)
    metrics.add_exposition(
        [transport](std::string& out) { kgpu::server::append_transport_metrics(*transport, out); });
  if (metrics_server)
    daemon.on_plan_changed([&metrics](const kgpu::Config&, const kgpu::Inventory& i, const kgpu::ResourcePlan& plan) {
      kgpu::record_plan(metrics, i, plan);
    });
  if (telemetry)
    daemon.on_plan_changed([&](const kgpu::Config&, const kgpu::Inventory& i, const kgpu::ResourcePlan&) {
      telemetry->on_plan(i, discovery->nvml());
    });
  daemon.on_plan_changed([&](const kgpu::Config& c, const kgpu::Inventory& i, const kgpu::ResourcePlan& p) {
    cdi.on_plan(c, i, p);
    labels.on_plan(c, i, p);
    health.on_plan(c, i, p);
    sysfs_health.on_plan(c, i, p);
    mps_readiness.on_plan(c, p);
  });
  if (dra) {
    if (auto st = dra->start(daemon); !st) {
      spdlog::error("DRA: {}", st.error().message);
      return 1;
    }
    daemon.on_plan_changed([&dra, &discovery](const kgpu::Config& c, const kgpu::Inventory& i,
                                              const kgpu::ResourcePlan& p) {
      dra->use_nvml(discovery->nvml(), c);  // dynamic MIG: once, with the first library discovery loaded
      dra->on_plan(c, i, p);
    });
    if (metrics_server) metrics.add_exposition([raw = dra.get()](std::string& out) { raw->append_share_metrics(out); });
  }
  if (node_config) node_config->start([&daemon] { daemon.request_reload(); });
  held_gpus.start([&daemon] { daemon.update_inventory([](const kgpu::Inventory& i) { return i; }); });
  int rc = daemon.run();
  held_gpus.stop();
  if (dra) dra->stop();
  if (node_config) node_config->stop();
  labels.on_exit();
  if (metrics_server) metrics_server->stop();
  if (!health.stop()) spdlog::debug("health monitor thread still in NVML; exiting without destructors");
  // Everything the node can see is cleaned up: sockets (daemon.run), the labels file. Leave
  // without running destructors: they would only free memory, while shutting gRPC's runtime down
  // joins its threads (up to 10 s when its backup poller is parked after a kubelet stopped
  // reading), and a health thread still asleep in nvmlEventSetWait must not meet NVML's static
  // destructors. SIGTERM -> exit stays a few milliseconds in every stream state.
  spdlog::shutdown();
  std::_Exit(rc);
}

void setup_plugin(CLI::App& root) {
  auto args = std::make_shared<PluginArgs>();
  auto* cmd = root.add_subcommand("plugin", "Run the device plugin daemon (serves the kubelet)");
  kgpu::add_config_flags(*cmd, args->flags, kgpu::FlagScope::Plugin);
  cmd->add_flag("--print-config", args->print_config, "Print every effective setting and its origin, then exit");
  cmd->add_flag("--strict-config", args->strict, "Treat unknown config keys as errors");
  cmd->callback([args] { kgpu::cli::set_exit_code(run_plugin(*args)); });
}
KGPU_COMMAND(setup_plugin);

}  // namespace
