// `kgpu labels`: the node labels GPU Feature Discovery would produce, from kgpu's own discovery and
// plan. Prints sorted `key=value` lines, or, when an output file is configured (--output-file,
// GFD_OUTPUT_FILE or flags.gfd.outputFile), writes the node-feature-discovery feature file
// atomically. One pass by default (--oneshot is accepted for GFD compatibility). `--daemon` keeps
// labelling for those who run it apart from the plugin: every sleep interval (GFD's
// --sleep-interval) and at once on SIGHUP, removing the file on SIGTERM unless
// --keep-labels-on-exit. (`kgpu plugin --labels` does the same inside the plugin, driven by its
// plan changes instead of an interval.)
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

int run_daemon(const kgpu::Config& config, kgpu::server::NodeDiscovery& discovery, int64_t start_time) {
  if (config.gfd_output_file.empty()) {
    std::cerr << "labels --daemon needs an output file (--output-file)\n";
    return 1;
  }
  auto interval = kgpu::parse_go_duration(config.gfd_sleep_interval).value_or(std::chrono::seconds(60));
  if (interval <= std::chrono::nanoseconds::zero()) interval = std::chrono::seconds(60);
  sigset_t set;
  sigemptyset(&set);
  for (int s : {SIGTERM, SIGINT, SIGHUP}) sigaddset(&set, s);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  int signal_fd = ::signalfd(-1, &set, SFD_CLOEXEC);
  // The GFD-only pod's log says what it does, as the plugin's labeller does: where, how often, and
  // each write with what changed (an unchanged rewrite is a debug line, not noise every interval).
  if (interval == std::chrono::nanoseconds::max())
    spdlog::info("labels: writing {} now and on SIGHUP (sleep interval infinite)", config.gfd_output_file);
  else
    spdlog::info("labels: writing {} every {}s and on SIGHUP", config.gfd_output_file,
                 std::chrono::duration_cast<std::chrono::seconds>(interval).count());
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
