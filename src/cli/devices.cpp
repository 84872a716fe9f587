// `kgpu devices`: what the daemon would advertise on this node with this config (inventory,
// resources, device IDs, health, NUMA), then exits. `-o json` for machines; `--prefer N` explains
// the GetPreferredAllocation choice of N devices for each resource. `--live` asks the running plugin
// (through its sockets next to --kubelet-socket) for the health it advertises now, so XIDs, lost
// and recovered devices show here; each Unhealthy device's cause comes from the plugin's /metrics
// (kgpu_device_unhealthy) when --metrics-addr is set; an MPS resource the plugin withholds is said
// to be waiting for its control daemon; an unreachable plugin makes the exit status 1. It also asks
// the kubelet's PodResources API which devices running pods hold, and names the pods that hold IDs this config no
// longer advertises (the plugin keeps those GPUs Unhealthy until the pods are gone). With DRA on, it
// reads the DRA checkpoints too and names each GPU a claim or a pod keeps with the other API than
// kgpu.dra.gpus says (dra/api_share.h), as the plugin logs it.
#include <algorithm>
#include <optional>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <map>

#include <nlohmann/json.hpp>

#include "alloc/preferred.h"
#include "cli/command.h"
#include "cli/devices_dra.h"
#include "cli/live_causes.h"
#include "cli/node_config_selector.h"
#include "config/loader.h"
#include "core/safe_file.h"
#include "dra/api_share.h"
#include "dra/claims/claim_checkpoint.h"
#include "dra/claims/claim_store.h"
#include "dra/sharing/memory_shares.h"
#include "dra/sharing/share_usage.h"
#include "mps/readiness.h"
#include "nvml/nvml_library.h"
#include "plan/plan.h"
#include "podresources/client.h"
#include "server/daemon.h"
#include "server/node_discovery.h"
#include "server/plugin_client.h"
#include "server/resource_server.h"

namespace {

struct DevicesArgs {
  kgpu::ConfigFlags flags;
  std::string output = "text";
  int prefer = 0;
  bool live = false;
};

using Causes = std::map<std::string, std::string>;  // device ID -> why it is Unhealthy
using Withheld = std::map<std::string, std::string>;  // resource -> why the plugin does not advertise it

// Overlays the running plugin's advertised health on the plan (and marks a GPU unhealthy when any
// of its advertised IDs is). An MPS resource whose control daemon is not ready is withheld by the
// plugin, so it has no socket: that is said as such. Returns how many resources the plugin should
// serve but could not be reached for (each is reported as a problem).
size_t overlay_live_health(const kgpu::Config& config, kgpu::Inventory& inv, kgpu::ResourcePlan& plan,
                           const Causes& causes, Withheld& withheld) {
  const std::string dir = kgpu::server::plugin_dir_of(config.kubelet_socket);
  std::map<std::string, std::string> unhealthy_gpu;  // UUID -> cause
  size_t unreachable = 0;
  // Causes come from the plugin's /metrics; without --metrics-addr (the chart's default) say where
  // else to look, once, rather than leave the operator guessing.
  const std::string unknown_cause = config.metrics_addr.empty()
                                        ? "not known here (no --metrics-addr: see the hint below)"
                                        : "advertised Unhealthy by the running plugin (see its log for the cause)";
  bool hint = false;
  for (auto& r : plan.resources) {
    if (!kgpu::mps_ready(config, r)) {
      withheld[r.name] = kgpu::mps_waiting_reason(config, r);
      plan.problems.push_back("live: " + r.name + " is withheld: " + withheld[r.name]);
      continue;
    }
    std::string socket = dir + "/" + kgpu::server::socket_file_name(r.name);
    auto live = kgpu::server::read_device_list(socket, std::chrono::seconds(2));
    if (!live) {
      plan.problems.push_back("live: " + r.name + " is not being served (" + live.error().message + ")");
      ++unreachable;
      continue;
    }
    std::map<std::string, bool> healthy;
    for (const auto& d : live->devices()) healthy[d.id()] = d.health() == "Healthy";
    for (auto& d : r.devices) {
      auto it = healthy.find(d.id);
      if (it == healthy.end()) continue;
      d.healthy = it->second;
      auto cause = causes.find(d.id);
      if (!d.healthy) {
        unhealthy_gpu[d.id.substr(0, d.id.find("::"))] = cause != causes.end() ? cause->second : unknown_cause;
        hint |= cause == causes.end() && config.metrics_addr.empty();
      }
    }
  }
  if (hint)
    plan.problems.push_back(
        "live: the causes of Unhealthy devices are read from the running plugin's /metrics, and no --metrics-addr "
        "is given (the Helm chart serves it only with metrics.enabled: true): pass the plugin's --metrics-addr, "
        "or read the causes in the plugin's log (kubectl logs <kgpu pod> -c kgpu | grep -i unhealthy)");
  for (auto& g : inv.gpus)
    if (auto it = unhealthy_gpu.find(g.uuid); it != unhealthy_gpu.end() && g.health.healthy)
      g.health = {false, it->second};
  return unreachable;
}

// device ID -> why the running plugin advertises it Unhealthy, from its /metrics
// (kgpu_device_unhealthy). Without --metrics-addr there is nothing to ask: empty.
Causes live_causes(const kgpu::Config& config, kgpu::ResourcePlan& plan) {
  Causes causes;
  if (config.metrics_addr.empty()) return causes;  // the placeholder cause says where to look
  auto got = kgpu::cli::fetch_device_causes(config.metrics_addr, std::chrono::seconds(2));
  if (!got) {
    plan.problems.push_back("live: cannot read the causes of Unhealthy devices: " + got.error().message);
    return causes;
  }
  for (auto& c : *got) causes[c.device] = std::move(c.reason);
  return causes;
}

// The running plugin's DRA checkpoints, one per served driver (none when DRA is off; a file that
// cannot be read is said as a problem).
std::vector<kgpu::dra::Checkpoint> checkpoints(const kgpu::Config& config, kgpu::ResourcePlan& plan) {
  std::vector<kgpu::dra::Checkpoint> out;
  for (const auto& driver : kgpu::dra::served_drivers(config.dra)) {
    const std::string path = kgpu::dra::claim_checkpoint_path(config.kubelet_socket, driver);
    auto text = kgpu::read_regular_file(path, kgpu::dra::kMaxCheckpointBytes, kgpu::FollowLinks::No);
    if (!text) {
      if (text.error().code != kgpu::Error::Code::NotFound)
        plan.problems.push_back("live: cannot read the DRA checkpoint " + path + ": " + text.error().message);
      continue;
    }
    auto checkpoint = kgpu::dra::parse_checkpoint(*text);
    if (!checkpoint) {
      plan.problems.push_back("live: the DRA checkpoint " + path + " is unreadable: " + checkpoint.error().message);
      continue;
    }
    out.push_back(std::move(*checkpoint));
  }
  return out;
}

// The prepared claims the running plugin's DRA checkpoints record.
std::vector<kgpu::dra::PreparedClaim> checkpointed_claims(const kgpu::Config& config, kgpu::ResourcePlan& plan) {
  std::vector<kgpu::dra::PreparedClaim> out;
  for (auto& checkpoint : checkpoints(config, plan))
    for (auto& c : checkpoint.claims) out.push_back(std::move(c));
  return out;
}

// The dynamic MIG instances the running plugin's checkpoints record (made, or being made).
std::vector<kgpu::dra::MigInstanceRecord> checkpointed_mig_instances(const kgpu::Config& config,
                                                                     kgpu::ResourcePlan& plan) {
  std::vector<kgpu::dra::MigInstanceRecord> out;
  for (auto& checkpoint : checkpoints(config, plan))
    for (auto& r : checkpoint.mig_instances) out.push_back(std::move(r));
  return out;
}

// GPUs that stay with the other API than kgpu.dra.gpus says, because a claim or a pod holds them
// (the running plugin does the same; dra/api_share.h).
void report_dra_split(const kgpu::Config& config, const kgpu::Inventory& inv, kgpu::ResourcePlan& plan,
                      const std::vector<kgpu::podresources::ContainerDevices>& pods) {
  if (!config.dra.enabled) return;
  const auto claims = checkpointed_claims(config, plan);
  const auto configured = kgpu::dra::dra_share(inv, config.dra).owned;
  auto pod_holds = kgpu::dra::pod_holds(inv, plan, pods);
  std::erase_if(pod_holds, [&](const kgpu::dra::GpuHold& h) { return h.gpu >= configured.size() || !configured[h.gpu]; });
  const auto owners = kgpu::dra::api_owners(inv, configured, kgpu::dra::claim_holds(inv, claims), pod_holds);
  for (const auto& o : owners.overrides) plan.problems.push_back("live: DRA split: " + o);
}

// Devices running pods hold under IDs the plan does not advertise (a config switch renamed them):
// the running plugin keeps their GPUs Unhealthy until those pods are gone. Reported as problems.
void report_held_devices(const kgpu::Config& config, const kgpu::Inventory& inv, kgpu::ResourcePlan& plan) {
  const std::string socket = kgpu::podresources::socket_for(config.kubelet_socket);
  auto pods = kgpu::podresources::list(socket, std::chrono::seconds(2));
  if (!pods) {
    plan.problems.push_back("live: cannot list the devices pods hold (" + pods.error().message + ")");
    report_dra_split(config, inv, plan, {});
    return;
  }
  report_dra_split(config, inv, plan, *pods);
  for (const auto& c : *pods) {
    const kgpu::Resource* r = plan.find(c.resource);
    // Only resources this plugin serves, or served under a vendor domain it advertises.
    const bool ours = r || std::any_of(plan.resources.begin(), plan.resources.end(), [&](const kgpu::Resource& x) {
                        return x.name.substr(0, x.name.find('/')) == c.resource.substr(0, c.resource.find('/'));
                      });
    if (!ours) continue;
    for (const auto& id : c.device_ids)
      if (!r || !r->find(id))
        plan.problems.push_back("held: pod " + c.pod() + " holds " + c.resource + " " + id +
                                ", which this config does not advertise; the running plugin keeps that GPU "
                                "Unhealthy until the pod is gone");
  }
}

std::string gib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f GiB", static_cast<double>(bytes) / (1024.0 * 1024 * 1024));
  return buf;
}

nlohmann::json to_json(const kgpu::Inventory& inv, const kgpu::ResourcePlan& plan, const Causes& causes,
                       const Withheld& withheld) {
  nlohmann::json j;
  j["driverVersion"] = inv.driver_version;
  j["gpus"] = nlohmann::json::array();
  for (const auto& g : inv.gpus) {
    nlohmann::json jg{{"index", g.index},       {"uuid", g.uuid},
                      {"vendor", kgpu::to_string(g.vendor)},
                      {"product", g.product},   {"memoryBytes", g.memory_bytes},
                      {"pciBusId", g.pci_bus_id}, {"minor", g.minor},
                      {"computeCapability", std::to_string(g.cc_major) + "." + std::to_string(g.cc_minor)},
                      {"healthy", g.health.healthy}, {"migEnabled", g.mig_enabled}};
    jg["numaNode"] = g.numa_node ? nlohmann::json(*g.numa_node) : nlohmann::json(nullptr);
    if (!g.health.reason.empty()) jg["healthReason"] = g.health.reason;
    for (const auto& m : g.mig_devices) jg["migDevices"].push_back({{"uuid", m.uuid}, {"profile", m.profile}});
    j["gpus"].push_back(jg);
  }
  j["resources"] = nlohmann::json::array();
  for (const auto& r : plan.resources) {
    nlohmann::json jr{{"name", r.name}, {"sharing", kgpu::to_string(r.sharing)}, {"replicas", r.replicas}};
    const auto held_back = withheld.find(r.name);
    if (held_back != withheld.end()) jr["withheld"] = held_back->second;
    jr["devices"] = nlohmann::json::array();
    for (const auto& d : r.devices) {
      nlohmann::json jd{{"id", d.id},
                        {"health", held_back != withheld.end() ? "Withheld" : d.healthy ? "Healthy" : "Unhealthy"},
                        {"numaNodes", d.numa_nodes}};
      if (auto it = causes.find(d.id); !d.healthy && it != causes.end()) jd["cause"] = it->second;
      jr["devices"].push_back(jd);
    }
    j["resources"].push_back(jr);
  }
  j["warnings"] = inv.warnings;
  j["problems"] = plan.problems;
  return j;
}

void print_text(const kgpu::Inventory& inv, const kgpu::ResourcePlan& plan, const Causes& causes,
                const Withheld& withheld) {
  std::cout << "GPUs: " << inv.gpus.size();
  if (!inv.driver_version.empty()) std::cout << " (driver " << inv.driver_version << ")";
  std::cout << "\n";
  for (const auto& g : inv.gpus) {
    std::cout << "  [" << g.index << "] " << g.uuid << "  " << g.product << "  " << gib(g.memory_bytes) << "  pci "
              << g.pci_bus_id << "  numa " << (g.numa_node ? std::to_string(*g.numa_node) : "-") << "  cc "
              << g.cc_major << "." << g.cc_minor << (g.health.healthy ? "" : "  UNHEALTHY: " + g.health.reason)
              << "\n";
    for (const auto& m : g.mig_devices) std::cout << "      MIG " << m.profile << "  " << m.uuid << "\n";
  }
  std::cout << "Resources: " << plan.resources.size() << "\n";
  for (const auto& r : plan.resources) {
    // A withheld resource is not advertised at all: its devices are neither healthy nor unhealthy.
    const bool held_back = withheld.count(r.name) > 0;
    size_t healthy = 0;
    for (const auto& d : r.devices) healthy += d.healthy;
    std::cout << "  " << r.name << ": " << r.devices.size() << " devices ";
    if (held_back) std::cout << "(withheld, none advertised: " << withheld.at(r.name) << ")";
    else std::cout << "(" << healthy << " healthy)";
    if (r.sharing != kgpu::SharingKind::None) std::cout << ", " << kgpu::to_string(r.sharing) << " x" << r.replicas;
    std::cout << "\n";
    for (const auto& d : r.devices) {
      std::cout << "    " << d.id << "  " << (held_back ? "Withheld" : d.healthy ? "Healthy" : "Unhealthy");
      for (auto n : d.numa_nodes) std::cout << "  numa " << n;
      if (auto it = causes.find(d.id); !d.healthy && it != causes.end()) std::cout << "  cause: " << it->second;
      std::cout << "\n";
    }
  }
  for (const auto& w : inv.warnings) std::cout << "warning: " << w << "\n";
  for (const auto& p : plan.problems) std::cout << "problem: " << p << "\n";
}

// --live when the config file on disk is invalid: exactly when the operator needs the live view,
// and the running plugin still serves its last valid config. Nothing of the file can be planned,
// so the plugin's own sockets (kgpu-*.sock in the kubelet's folder, which flags and environment
// still name) are listed with what each advertises. Exit 1: the file needs fixing.
int print_live_from_sockets(const DevicesArgs& args) {
  kgpu::ConfigFlags flags = args.flags;
  flags.values.erase("configFile");
  auto env = kgpu::process_environment();
  env.erase("CONFIG_FILE");
  env.erase("GFD_CONFIG_FILE");
  auto without_file = kgpu::load_config(flags, env, false);
  if (!without_file) return 1;  // the flags themselves are wrong: said above
  const std::string dir = kgpu::server::plugin_dir_of(without_file->config.kubelet_socket);
  std::cout << "The config file on disk is invalid (above); the running plugin keeps serving its last valid one.\n"
            << "Live, from the plugin's sockets in " << dir << ":\n";
  std::vector<std::string> sockets;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    if (name.starts_with("kgpu-") && name.ends_with(".sock")) sockets.push_back(name);
  }
  std::sort(sockets.begin(), sockets.end());
  if (sockets.empty()) std::cout << "  no kgpu socket (is kgpu plugin running with this --kubelet-socket?)\n";
  for (const auto& name : sockets) {
    auto live = kgpu::server::read_device_list(dir + "/" + name, std::chrono::seconds(2));
    if (!live) {
      std::cout << "  " << name << ": not answering (" << live.error().message << ")\n";
      continue;
    }
    size_t healthy = 0;
    for (const auto& d : live->devices()) healthy += d.health() == "Healthy";
    std::cout << "  " << name << ": " << live->devices_size() << " devices (" << healthy << " healthy)\n";
    for (const auto& d : live->devices()) std::cout << "    " << d.id() << "  " << d.health() << "\n";
  }
  return 1;
}

int run_devices(const DevicesArgs& args) {
  auto loaded = kgpu::cli::load_config_as_daemon(args.flags, false);
  if (!loaded) {
    std::cerr << "invalid configuration:\n" << loaded.error().message << "\n";
    return args.live ? print_live_from_sockets(args) : 1;
  }
  const auto& config = loaded->config;
  // Which config this is and why (the Node label's choice under a per-node config), so that what
  // is shown can be matched to what the daemon serves.
  const std::string config_file = config.config_file.empty() ? "none (built-in defaults)" : config.config_file;
  const std::string config_origin = loaded->origins["configFile"];
  kgpu::server::NodeDiscovery discovery;
  auto inv = discovery.discover(config);
  if (!inv) {
    std::cerr << "device discovery failed: " << inv.error().message << "\n";
    return 1;
  }
  // Which libnvidia-ml.so.1 answered (the container driver root is searched first, then the host
  // driver root, then the loader's path): the first thing to check when GPUs are missing.
  const auto nvml = discovery.nvml();
  const std::string nvml_path = nvml ? nvml->path() : std::string("not loaded");
  auto plan = kgpu::plan(config, *inv);
  size_t unreachable = 0;
  Causes causes;
  Withheld withheld;
  if (args.live) {
    causes = live_causes(config, plan);
    unreachable = overlay_live_health(config, *inv, plan, causes, withheld);
    report_held_devices(config, *inv, plan);
  }
  // A script asking the live state must not take "not running" for "nothing wrong".
  const int rc = unreachable == 0 ? 0 : 1;
  if (unreachable > 0)
    std::cerr << "kgpu devices --live: cannot reach the running plugin for " << unreachable
              << " resource(s) under " << kgpu::server::plugin_dir_of(config.kubelet_socket)
              << " (is kgpu plugin running with this --kubelet-socket?)\n";
  if (args.output == "dra") {
    // --live: what the running plugin's claims made, so their GPUs show as the daemon publishes them.
    std::optional<std::vector<kgpu::dra::MigInstanceRecord>> made;
    if (args.live && config.dra.enabled) made = checkpointed_mig_instances(config, plan);
    if (args.live)
      for (const auto& p : plan.problems) std::cerr << "problem: " << p << "\n";
    return std::max(rc, kgpu::cli::print_dra_slices(config, *inv, nvml, made));
  }
  // The shared GPUs' memory shares as the running plugin's checkpoint records them.
  std::vector<kgpu::dra::SharedGpuUse> shares;
  if (args.live && config.dra.enabled) {
    const auto owned = kgpu::dra::dra_share(*inv, config.dra).owned;
    const auto shareable = kgpu::dra::memory_share_options(*inv, config.dra.memory_sharing, owned).gpus;
    shares = kgpu::dra::shared_gpu_use(*inv, shareable, checkpointed_claims(config, plan));
  }
  if (args.output == "json") {
    auto j = to_json(*inv, plan, causes, withheld);
    j["config"] = {{"file", config.config_file}, {"origin", config_origin}};
    if (args.live && config.dra.enabled) j["memoryShares"] = kgpu::dra::share_use_json(shares);
    j["nvml"] = nvml_path;
    if (args.prefer > 0)
      for (size_t i = 0; i < plan.resources.size(); ++i) {
        const auto& r = plan.resources[i];
        std::vector<std::string> ids;
        for (const auto& d : r.devices)
          if (d.healthy) ids.push_back(d.id);
        auto pick = kgpu::preferred_allocation(config, *inv, r, ids, {}, args.prefer);
        j["resources"][i]["preferred"] = pick ? nlohmann::json(*pick) : nlohmann::json({{"error", pick.error().message}});
      }
    std::cout << j.dump(2) << "\n";
    return rc;
  }
  std::cout << "Config: " << config_file << " (" << config_origin << ")\n";
  std::cout << "NVML: " << nvml_path << "\n";
  print_text(*inv, plan, causes, withheld);
  if (!shares.empty()) std::cout << "DRA memory shares:\n" << kgpu::dra::share_use_text(shares);
  if (args.prefer > 0) {
    for (const auto& r : plan.resources) {
      std::vector<std::string> ids;
      for (const auto& d : r.devices)
        if (d.healthy) ids.push_back(d.id);
      std::cout << "Preferred " << args.prefer << " of " << r.name << ":\n"
                << kgpu::explain_preferred(config, *inv, r, ids, {}, args.prefer) << "\n";
    }
  }
  return rc;
}

void setup_devices(CLI::App& root) {
  auto args = std::make_shared<DevicesArgs>();
  auto* cmd = root.add_subcommand("devices", "Print the devices and resources the plugin would advertise");
  kgpu::add_config_flags(*cmd, args->flags, kgpu::FlagScope::Devices);
  cmd->add_option("-o,--output", args->output, "text|json|dra")->check(CLI::IsMember({"text", "json", "dra"}));
  cmd->add_option("--prefer", args->prefer, "Explain the preferred allocation of N devices per resource");
  cmd->add_flag("--live", args->live,
                "Show the health the running plugin advertises now (its sockets next to --kubelet-socket; each "
                "Unhealthy device's cause from its /metrics at --metrics-addr); exit 1 when it cannot be reached");
  cmd->callback([args] { kgpu::cli::set_exit_code(run_devices(*args)); });
}
KGPU_COMMAND(setup_devices);

}  // namespace
