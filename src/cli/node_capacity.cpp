// `kgpu node-capacity set NAME=QTY [--node N]` / `kgpu node-capacity remove NAME [--node N]`:
// advertises (or removes) a node-level extended resource in the Node's status.capacity with a JSON
// Patch of the status subresource, as the Kubernetes docs' "advertise extended resources for a
// node" example does with curl. For counts nothing allocates per device (licences, dongles): no
// health, no per-container devices; a device plugin is the way for those. The node is --node,
// else NODE_NAME (the chart sets it); the API server and credentials are the pod's service
// account (or KGPU_KUBE_API / KGPU_KUBE_TOKEN), as for the rest of kgpu. Exit 2 for a bad
// NAME/QTY or node name, 1 when the API server cannot be reached or refuses the patch.
#include <chrono>
#include <iostream>
#include <memory>

#include "cli/command.h"
#include "config/loader.h"
#include "kube/api_request.h"
#include "kube/node_capacity.h"
#include "kube/node_watcher.h"
#include "kube/watch_loop.h"

namespace {

using namespace std::chrono_literals;

constexpr auto kDeadline = 30s;
constexpr const char* kRbac = "patch on nodes/status";
constexpr const char* kJsonPatch = "application/json-patch+json";

struct CapacityArgs {
  std::string setting;  // set: NAME=QTY; remove: NAME
  std::string node;
};

// --node, else NODE_NAME; checked, since it goes into the request path.
kgpu::Result<std::string> node_name(const CapacityArgs& args, const std::map<std::string, std::string>& env) {
  std::string node = args.node;
  if (node.empty())
    if (auto it = env.find("NODE_NAME"); it != env.end()) node = it->second;
  if (node.empty()) return kgpu::Error::invalid("which node? pass --node NAME or set NODE_NAME");
  if (auto checked = kgpu::kube::check_node_name(node); !checked) return checked.error();
  return node;
}

// Sends `patch` to the node's status; 0 on a 2xx answer, else 1 with the reason on stderr.
int send_patch(const std::string& node, const std::string& patch, const std::map<std::string, std::string>& env,
               const std::string& missing_hint) {
  auto api = kgpu::kube::find_api_server(env);
  if (!api) {
    std::cerr << "node-capacity: cannot reach the API server: " << api.error().message << "\n";
    return 1;
  }
  kgpu::kube::Interrupter interrupter;
  kgpu::kube::ApiClient client(std::move(*api), interrupter);
  const std::string path = "/api/v1/nodes/" + node + "/status";
  auto answer = client.patch(path, patch, kJsonPatch, kDeadline, kgpu::kube::kMaxNodeObjectBytes);
  if (!answer) {
    std::cerr << "node-capacity: PATCH " << path << ": " << answer.error().message << "\n";
    return 1;
  }
  if (answer->status / 100 != 2) {
    std::string hint;
    if (answer->status == 404) hint = " (no Node named \"" + node + "\"?)";
    if (answer->status == 422 && !missing_hint.empty()) hint = " (" + missing_hint + ")";
    std::cerr << "node-capacity: " << kgpu::kube::api_status_problem("PATCH " + path, *answer, kRbac) << hint
              << "\n";
    return 1;
  }
  return 0;
}

int run_set(const CapacityArgs& args) {
  const auto env = kgpu::process_environment();
  auto setting = kgpu::kube::parse_capacity_setting(args.setting);
  if (!setting) {
    std::cerr << "node-capacity set: " << setting.error().message << "\n";
    return 2;
  }
  auto node = node_name(args, env);
  if (!node) {
    std::cerr << "node-capacity set: " << node.error().message << "\n";
    return 2;
  }
  const int rc = send_patch(*node, kgpu::kube::capacity_add_patch(setting->name, setting->quantity), env, "");
  if (rc == 0)
    std::cout << "node " << *node << ": status.capacity " << setting->name << "=" << setting->quantity << "\n";
  return rc;
}

int run_remove(const CapacityArgs& args) {
  const auto env = kgpu::process_environment();
  if (auto name = kgpu::kube::check_extended_resource_name(args.setting); !name) {
    std::cerr << "node-capacity remove: " << name.error().message << "\n";
    return 2;
  }
  auto node = node_name(args, env);
  if (!node) {
    std::cerr << "node-capacity remove: " << node.error().message << "\n";
    return 2;
  }
  const int rc = send_patch(*node, kgpu::kube::capacity_remove_patch(args.setting), env,
                            "is " + args.setting + " in the node's status.capacity?");
  if (rc == 0) std::cout << "node " << *node << ": " << args.setting << " removed from status.capacity\n";
  return rc;
}

void setup_node_capacity(CLI::App& root) {
  auto* group = root.add_subcommand(
      "node-capacity", "Advertise a node-level count (licences, dongles) in the Node's status.capacity");
  group->require_subcommand(1);
  auto set_args = std::make_shared<CapacityArgs>();
  auto* set = group->add_subcommand("set", "Set status.capacity[NAME] of the Node to QTY (JSON Patch of nodes/status)");
  set->add_option("setting", set_args->setting, "NAME=QTY, e.g. example.com/dongle=4 (a whole number)")->required();
  set->add_option("--node", set_args->node, "the Node to patch (default: NODE_NAME)");
  set->callback([set_args] { kgpu::cli::set_exit_code(run_set(*set_args)); });
  auto remove_args = std::make_shared<CapacityArgs>();
  auto* remove = group->add_subcommand("remove", "Remove NAME from the Node's status.capacity");
  remove->add_option("name", remove_args->setting, "the extended resource, e.g. example.com/dongle")->required();
  remove->add_option("--node", remove_args->node, "the Node to patch (default: NODE_NAME)");
  remove->callback([remove_args] { kgpu::cli::set_exit_code(run_remove(*remove_args)); });
}
KGPU_COMMAND(setup_node_capacity);

}  // namespace
