// Fuzz target: what kgpu reads from the API server. The whole input as the answer to a GET of the
// Node, then line by line as a watch stream (as NodeWatcher splits it), and the labels of every
// Node that parsed through the per-node config choice. Any answer gives a value or an Error.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "kube/node_config.h"
#include "kube/node_object.h"

namespace {

const kgpu::kube::NodeConfigSource kSource{"node-1", "nvidia.com/device-plugin.config", "/config", "default"};

// A label value picks a file in the config folder, or the default: never a path elsewhere.
void choose(const kgpu::kube::NodeSnapshot& node) {
  for (bool exists : {false, true}) {
    auto choice = kgpu::kube::choose_node_config(node.labels, kSource, [exists](const std::string&) { return exists; });
    if (choice.file.empty()) continue;
    const std::string_view name = std::string_view(choice.file).substr(kSource.config_dir.size() + 1);
    if (!choice.file.starts_with(kSource.config_dir + "/") || name.empty() || name.find('/') != std::string_view::npos ||
        name == "." || name == "..")
      __builtin_trap();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (auto node = kgpu::kube::parse_node(input)) choose(*node);
  for (size_t start = 0; start < input.size();) {
    size_t end = input.find('\n', start);
    if (end == std::string_view::npos) end = input.size();
    const std::string_view line = input.substr(start, end - start);
    if (!line.empty())
      if (auto event = kgpu::kube::parse_watch_event(line)) choose(event->node);
    start = end + 1;
  }
  return 0;
}
