// `kgpu labels`: the node labels GPU Feature Discovery would produce, from kgpu's own discovery and
// plan. Prints sorted `key=value` lines, or, when an output file is configured (--output-file,
// GFD_OUTPUT_FILE or flags.gfd.outputFile), writes the node-feature-discovery feature file
// atomically. One pass by default (--oneshot is accepted for GFD compatibility). `--daemon` keeps
// labelling for those who run it apart from the plugin: every sleep interval (GFD's
// --sleep-interval) and at once on SIGHUP, removing the file on SIGTERM unless
// --keep-labels-on-exit. (`kgpu plugin --labels` does the same inside the plugin, driven by its
// plan changes instead of an interval.) With flags.useNodeFeatureAPI (GFD_USE_NODE_FEATURE_API)
// the labels go to the node's NodeFeature object through the API server instead of the file, as
// GFD writes them (kube/node_feature.h); deleted on SIGTERM unless --keep-labels-on-exit.
#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>

#include <chrono>
#include <ctime>
#include <iostream>
#include <optional>

#include "cli/command.h"
#include "cli/labels_node_feature.h"
#include "cli/node_config_selector.h"
#include "config/go_duration.h"
#include "config/loader.h"
#include "labels/context.h"
#include "labels/feature_file.h"
#include "labels/label_changes.h"
#include "labels/labels.h"
#include "plan/plan.h"
#include "server/node_discovery.h"

namespace {

struct LabelsArgs {
  kgpu::ConfigFlags flags;
  bool daemon = false;
};

// The labels of the node as it is now; an Error only when discovery fails with failOnInitError.
kgpu::Result<kgpu::Labels> current_labels(const kgpu::Config& config, kgpu::server::NodeDiscovery& discovery,
                                          int64_t start_time) {
  auto inventory = discovery.discover(config);
  if (!inventory) {
    // GFD with failOnInitError=false labels a node it cannot read as one without GPUs.
    if (config.fail_on_init_error) return kgpu::Error::unavailable("device discovery failed: " + inventory.error().message);
    std::cerr << "device discovery failed, labelling as a node without GPUs: " << inventory.error().message << "\n";
    inventory = kgpu::Inventory{};
  }
  const auto plan = kgpu::plan(config, *inventory);
  auto stamp = config.gfd_no_timestamp ? std::nullopt : std::optional<int64_t>(start_time);
  return kgpu::node_labels(config, *inventory, plan, kgpu::read_label_context(config, *inventory, stamp));
}

// Waits for SIGTERM/SIGINT (false) or SIGHUP / the interval (true).
bool wait_next_round(int signal_fd, std::chrono::nanoseconds interval) {
  int timeout_ms = interval == std::chrono::nanoseconds::max()
                       ? -1
                       : static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(interval).count());
  pollfd p{signal_fd, POLLIN, 0};
  if (::poll(&p, 1, timeout_ms) <= 0) return true;
  signalfd_siginfo info{};
  if (::read(signal_fd, &info, sizeof(info)) != sizeof(info)) return true;
  return info.ssi_signo == SIGHUP;
}

std::chrono::nanoseconds sleep_interval(const kgpu::Config& config) {
  auto interval = kgpu::parse_go_duration(config.gfd_sleep_interval).value_or(std::chrono::seconds(60));
  return interval <= std::chrono::nanoseconds::zero() ? std::chrono::seconds(60) : interval;
}

int blocked_signals_fd() {
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  return ::signalfd(-1, &set, SFD_CLOEXEC);
}

std::string every(std::chrono::nanoseconds interval) {
  if (interval == std::chrono::nanoseconds::max()) return "now and on SIGHUP (sleep interval infinite)";
  return "every " + std::to_string(std::chrono::duration_cast<std::chrono::seconds>(interval).count()) +
         "s and on SIGHUP";
}

// --daemon with flags.useNodeFeatureAPI (cli/labels_node_feature.h).
int run_daemon_to_node_feature(const kgpu::Config& config, kgpu::server::NodeDiscovery& discovery, int64_t start_time) {
  const auto interval = sleep_interval(config);
  // Signals blocked before the sync's thread exists: it inherits the mask, so SIGTERM always
  // reaches the signalfd (never that thread, where its default action would end the process).
  int signal_fd = blocked_signals_fd();
  int rc = kgpu::cli::run_node_feature_daemon([&] { return current_labels(config, discovery, start_time); },
                                              [&] { return wait_next_round(signal_fd, interval); },
                                              config.keep_labels_on_exit, every(interval));
  ::close(signal_fd);
  return rc;
}

int run_daemon(const kgpu::Config& config, kgpu::server::NodeDiscovery& discovery, int64_t start_time) {
  if (config.use_node_feature_api) return run_daemon_to_node_feature(config, discovery, start_time);
  if (config.gfd_output_file.empty()) {
    std::cerr << "labels --daemon needs an output file (--output-file)\n";
    return 1;
  }
  const auto interval = sleep_interval(config);
  int signal_fd = blocked_signals_fd();
  // The GFD-only pod's log says what it does, as the plugin's labeller does: where, how often, and
  // each write with what changed (an unchanged rewrite is a debug line, not noise every interval).
  spdlog::info("labels: writing {} {}", config.gfd_output_file, every(interval));
  std::optional<kgpu::Labels> last;
  do {
    auto labels = current_labels(config, discovery, start_time);
    if (!labels) {
      spdlog::error("labels: {}", labels.error().message);
      return 1;
    }
    if (auto written = kgpu::write_feature_file(config.gfd_output_file, *labels); !written) {
      spdlog::error("labels: {}", written.error().message);
      continue;
    }
    const auto changed = kgpu::changed_label_keys(last ? *last : kgpu::Labels{}, *labels);
    if (!last) spdlog::info("labels: wrote {} labels to {}", labels->size(), config.gfd_output_file);
    else if (!changed.empty())
      spdlog::info("labels: wrote {} labels to {}; changed: {}", labels->size(), config.gfd_output_file,
                   fmt::join(changed, ", "));
    else spdlog::debug("labels: rewrote {} labels to {}, none changed", labels->size(), config.gfd_output_file);
    last = std::move(*labels);
  } while (wait_next_round(signal_fd, interval));
  ::close(signal_fd);
  if (config.keep_labels_on_exit) {
    spdlog::info("labels: leaving {} in place (keepLabelsOnExit)", config.gfd_output_file);
  } else if (auto removed = kgpu::remove_feature_file(config.gfd_output_file); !removed) {
    spdlog::error("labels: {}", removed.error().message);
  } else {
    spdlog::info("labels: removed {}", config.gfd_output_file);
  }
  return 0;
}

int run_labels(const LabelsArgs& args) {
  auto loaded = kgpu::cli::load_config_as_daemon(args.flags, false);
  if (!loaded) {
    std::cerr << "invalid configuration:\n" << loaded.error().message << "\n";
    return 1;
  }
  const auto& config = loaded->config;
  kgpu::server::NodeDiscovery discovery;
  const auto start_time = static_cast<int64_t>(std::time(nullptr));
  if (args.daemon && !config.gfd_oneshot) return run_daemon(config, discovery, start_time);

  auto labels = current_labels(config, discovery, start_time);
  if (!labels) {
    std::cerr << labels.error().message << "\n";
    return 1;
  }
  if (config.use_node_feature_api) return kgpu::cli::write_node_feature_once(*labels);
  const auto origin = loaded->origins.find("flags.gfd.outputFile");
  const bool to_file = origin != loaded->origins.end() && origin->second != "default" && !config.gfd_output_file.empty();
  if (!to_file) {
    std::cout << kgpu::format_labels(*labels);
    return 0;
  }
  if (auto written = kgpu::write_feature_file(config.gfd_output_file, *labels); !written) {
    std::cerr << written.error().message << "\n";
    return 1;
  }
  return 0;
}

void setup_labels(CLI::App& root) {
  auto args = std::make_shared<LabelsArgs>();
  auto* cmd = root.add_subcommand("labels", "Print or write the node labels (GPU Feature Discovery names)");
  kgpu::add_config_flags(*cmd, args->flags, kgpu::FlagScope::Labels);
  cmd->add_flag("--daemon", args->daemon,
                "Keep the feature file up to date (every --sleep-interval and on SIGHUP); remove it on SIGTERM");
  cmd->callback([args] { kgpu::cli::set_exit_code(run_labels(*args)); });
}
KGPU_COMMAND(setup_labels);

}  // namespace
