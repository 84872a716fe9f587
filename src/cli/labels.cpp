// `kgpu labels`: the node labels GPU Feature Discovery would produce, from kgpu's own discovery and
// plan. Prints sorted `key=value` lines, or, when an output file is configured (--output-file,
// GFD_OUTPUT_FILE or flags.gfd.outputFile), writes the node-feature-discovery feature file
// atomically. One pass (--oneshot is accepted for GFD compatibility): continuous labelling, re-run
// on every plan change, is the daemon's job (`kgpu plugin --labels-enabled`).
#include <ctime>
#include <iostream>

#include "cli/command.h"
#include "config/loader.h"
#include "labels/context.h"
#include "labels/feature_file.h"
#include "labels/labels.h"
#include "plan/plan.h"
#include "server/node_discovery.h"

namespace {

struct LabelsArgs {
  kgpu::ConfigFlags flags;
};

int run_labels(const LabelsArgs& args) {
  auto loaded = kgpu::load_config(args.flags, kgpu::process_environment(), false);
  if (!loaded) {
    std::cerr << "invalid configuration:\n" << loaded.error().message << "\n";
    return 1;
  }
  const auto& config = loaded->config;
  kgpu::server::NodeDiscovery discovery;
  auto inventory = discovery.discover(config);
  if (!inventory) {
    // GFD with failOnInitError=false labels a node it cannot read as one without GPUs.
    if (config.fail_on_init_error) {
      std::cerr << "device discovery failed: " << inventory.error().message << "\n";
      return 1;
    }
    std::cerr << "device discovery failed, labelling as a node without GPUs: " << inventory.error().message << "\n";
    inventory = kgpu::Inventory{};
  }
  const auto plan = kgpu::plan(config, *inventory);
  const auto context = kgpu::read_label_context(config, *inventory, static_cast<int64_t>(std::time(nullptr)));
  const auto labels = kgpu::node_labels(config, *inventory, plan, context);

  const auto origin = loaded->origins.find("flags.gfd.outputFile");
  const bool to_file = origin != loaded->origins.end() && origin->second != "default" && !config.gfd_output_file.empty();
  if (!to_file) {
    std::cout << kgpu::format_labels(labels);
    return 0;
  }
  if (auto written = kgpu::write_feature_file(config.gfd_output_file, labels); !written) {
    std::cerr << written.error().message << "\n";
    return 1;
  }
  return 0;
}

void setup_labels(CLI::App& root) {
  auto args = std::make_shared<LabelsArgs>();
  auto* cmd = root.add_subcommand("labels", "Print or write the node labels (GPU Feature Discovery names)");
  kgpu::add_config_flags(*cmd, args->flags);
  cmd->callback([args] { kgpu::cli::set_exit_code(run_labels(*args)); });
}
KGPU_COMMAND(setup_labels);

}  // namespace
