// `kgpu kubelet-sim`: the kubelet stand-in (sim::KubeletSim) as a command. Serves Registration
// on DIR/kubelet.sock and PodResources (the pods it allocated for) on DIR/../pod-resources/kubelet.sock, prints every registration and ListAndWatch update, and runs steps from
// flags or a script:
//   wait RESOURCE [COUNT]          until RESOURCE streams COUNT healthy devices (default: any)
//   allocate RESOURCE ID,ID,...    Allocate those IDs for a new pod (default/pod-<n>)
//   allocate RESOURCE N            GetPreferredAllocation of N healthy devices, then Allocate them
//   end-pod NAME                   the pod default/NAME ends (PodResources stops listing it)
//   prefer RESOURCE N [ID,...]     GetPreferredAllocation of N (with must-include IDs)
//   restart                        simulate a kubelet restart and wait for every plugin to return
//   exit                           stop here
// Lines starting with '#' are comments.
// With --dra it is also the kubelet's DRA side for the kubelet root above DIR: it registers the
// DRA plugin that appears in plugins_registry (as a kubelet 1.<--dra-kubelet-minor> would), then
// prepares each --dra-claim (a ResourceClaim as JSON: its namespace, name and uid are what the
// kubelet sends; the plugin reads the claim itself from the API server) and, with
// --dra-unprepare, unprepares them again. Acting as kubelet 1.34+ with ResourceHealthStatus, it also
// watches the plugin's device health stream (DRAResourceHealth) and prints each change.
#include <signal.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include <chrono>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <sstream>
#include <thread>

#include "cli/command.h"
#include "sim/dra_health_watch.h"
#include "sim/dra_kubelet_sim.h"
#include "sim/kubelet_sim.h"
#include "sim/sim_steps.h"

namespace {

struct SimArgs {
  std::string dir;
  std::string authority;  // empty: the socket path (kubelets 1.19-1.25)
  std::vector<std::string> allocations;  // RESOURCE=ID,ID or RESOURCE=N
  std::string script;
  int restart_after_ms = -1;
  bool once = false;
  int timeout_s = 30;
  bool dra = false;
  int dra_kubelet_minor = 34;
  std::vector<std::string> dra_claims;  // ResourceClaim JSON files
  bool dra_unprepare = false;
};

// namespace, name and uid of a ResourceClaim file; error naming the file and what is missing.
kgpu::Result<kgpu::sim::DraClaim> read_claim_ref(const std::string& path) {
  std::ifstream in(path);
  if (!in) return kgpu::Error::not_found("cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  auto doc = nlohmann::json::parse(text.str(), nullptr, false);
  if (!doc.is_object() || !doc.contains("metadata") || !doc["metadata"].is_object())
    return kgpu::Error::invalid(path + ": not a ResourceClaim in JSON (no metadata)");
  kgpu::sim::DraClaim claim;
  for (auto [key, out] : {std::pair<const char*, std::string*>{"namespace", &claim.namespace_name},
                          {"name", &claim.name}, {"uid", &claim.uid}}) {
    const auto& v = doc["metadata"].value(key, nlohmann::json());
    if (!v.is_string() || v.get<std::string>().empty()) return kgpu::Error::invalid(path + ": metadata." + key + " missing");
    *out = v.get<std::string>();
  }
  return claim;
}

// The kubelet's DRA health manager (KEP-4680): the plugin's health stream, one line per device
// whose health or message changed, as the pod status would show it. For kubelets 1.34+ (the gate
// ResourceHealthStatus on), when the plugin advertised the service.
std::unique_ptr<kgpu::sim::DraHealthWatch> watch_dra_health(const kgpu::sim::DraPlugin& plugin) {
  auto last = std::make_shared<std::map<std::string, std::string>>();  // watch thread only
  std::cout << "[kubelet-sim] DRA: watching device health of " << plugin.driver << " (v1alpha1.DRAResourceHealth)"
            << std::endl;
  return std::make_unique<kgpu::sim::DraHealthWatch>(plugin.endpoint, [last](const kgpu::sim::DraHealthReport& r) {
    for (const auto& d : r.devices) {
      std::string line = d.health + (d.message.empty() ? "" : ": " + d.message);
      auto& before = (*last)[d.pool + "/" + d.device];
      if (before == line) continue;
      before = line;
      std::cout << "[kubelet-sim] DRA health: " << d.pool << "/" << d.device << " " << line << std::endl;
    }
  });
}

// The DRA side: register the plugin, watch its health, prepare (and unprepare) the claims, print
// what came back.
int run_dra(const SimArgs& args, std::chrono::seconds timeout, std::unique_ptr<kgpu::sim::DraHealthWatch>& health) {
  std::string root = std::filesystem::path(args.dir).parent_path().string();
  kgpu::sim::DraKubeletSim dra(root, args.dra_kubelet_minor);
  std::cout << "[kubelet-sim] DRA: watching " << root << "/plugins_registry as kubelet 1." << args.dra_kubelet_minor
            << std::endl;
  auto plugin = dra.wait_for_plugin(timeout);
  if (!plugin) {
    std::cerr << "kubelet-sim: DRA: " << plugin.error().message << "\n";
    return 1;
  }
  std::cout << "[kubelet-sim] DRA: registered driver " << plugin->driver << " at " << plugin->endpoint << " ("
            << plugin->service << ")" << std::endl;
  if (plugin->health && args.dra_kubelet_minor >= 34) health = watch_dra_health(*plugin);
  std::vector<kgpu::sim::DraClaim> claims;
  for (const auto& file : args.dra_claims) {
    auto claim = read_claim_ref(file);
    if (!claim) {
      std::cerr << "kubelet-sim: " << claim.error().message << "\n";
      return 1;
    }
    claims.push_back(*claim);
  }
  if (claims.empty()) return 0;
  auto prepared = dra.prepare(plugin->driver, claims, timeout);
  if (!prepared) {
    std::cerr << "kubelet-sim: DRA: " << prepared.error().message << "\n";
    return 1;
  }
  int failed = 0;
  for (const auto& [uid, claim] : *prepared) {
    if (!claim.error.empty()) {
      std::cout << "[kubelet-sim] DRA: claim " << uid << " NOT prepared: " << claim.error << std::endl;
      ++failed;
      continue;
    }
    std::cout << "[kubelet-sim] DRA: claim " << uid << " prepared:" << std::endl;
    for (const auto& d : claim.devices) {
      std::cout << "    " << d.pool << "/" << d.device << " ->";
      for (const auto& id : d.cdi_device_ids) std::cout << " " << id;
      std::cout << std::endl;
    }
  }
  if (args.dra_unprepare) {
    auto unprepared = dra.unprepare(plugin->driver, claims, timeout);
    if (!unprepared) {
      std::cerr << "kubelet-sim: DRA: " << unprepared.error().message << "\n";
      return 1;
    }
    for (const auto& [uid, error] : *unprepared) {
      std::cout << "[kubelet-sim] DRA: claim " << uid << (error.empty() ? " unprepared" : " NOT unprepared: " + error)
                << std::endl;
      failed += !error.empty();
    }
  }
  return failed == 0 ? 0 : 1;
}

int run_sim(const SimArgs& args) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before gRPC starts threads; sigwait below

  kgpu::sim::KubeletSim sim(args.dir);
  sim.set_authority(args.authority);
  sim.on_event([](const kgpu::sim::SimEvent& e) {
    std::cout << "[kubelet-sim] " << kgpu::sim::to_string(e.kind) << (e.resource.empty() ? "" : " " + e.resource)
              << ": " << e.message << std::endl;
  });
  if (auto st = sim.start(); !st) {
    std::cerr << "kubelet-sim: " << st.error().message << "\n";
    return 1;
  }
  std::cout << "[kubelet-sim] serving Registration on " << sim.socket_path() << std::endl;

  std::vector<std::string> steps;
  for (const auto& a : args.allocations) {
    auto eq = a.find('=');
    if (eq == std::string::npos) {
      std::cerr << "kubelet-sim: --allocate wants RESOURCE=ID,ID or RESOURCE=COUNT, got \"" << a << "\"\n";
      return 1;
    }
    steps.push_back("wait " + a.substr(0, eq));
    steps.push_back("allocate " + a.substr(0, eq) + " " + a.substr(eq + 1));
  }
  if (!args.script.empty()) {
    std::ifstream in(args.script);
    if (!in) {
      std::cerr << "kubelet-sim: cannot read script " << args.script << "\n";
      return 1;
    }
    for (std::string line; std::getline(in, line);) steps.push_back(line);
  }
  auto timeout = std::chrono::seconds(args.timeout_s);
  std::unique_ptr<kgpu::sim::DraHealthWatch> dra_health;  // open until the simulator ends
  if (args.dra)
    if (int rc = run_dra(args, timeout, dra_health); rc != 0) return rc;
  if (auto st = kgpu::sim::run_sim_steps(sim, steps, timeout, std::cout); !st) {
    std::cerr << "kubelet-sim: " << st.error().message << "\n";
    return 1;
  }
  if (args.restart_after_ms >= 0) {
    // A command-line tool's delay, not synchronisation: the operator asked for a pause.
    std::this_thread::sleep_for(std::chrono::milliseconds(args.restart_after_ms));
    if (auto st = kgpu::sim::run_sim_steps(sim, {"restart"}, timeout, std::cout); !st) {
      std::cerr << "kubelet-sim: " << st.error().message << "\n";
      return 1;
    }
  }
  if (args.once) return 0;
  int sig = 0;
  sigwait(&set, &sig);
  std::cout << "[kubelet-sim] stopping" << std::endl;
  return 0;
}

void setup_kubelet_sim(CLI::App& root) {
  auto args = std::make_shared<SimArgs>();
  auto* cmd = root.add_subcommand("kubelet-sim", "A kubelet stand-in: Registration server and device-manager client");
  cmd->add_option("--dir", args->dir, "Device-plugin directory (kubelet.sock is created there)")->required();
  cmd->add_option("--allocate", args->allocations, "RESOURCE=ID,ID or RESOURCE=COUNT, once the resource is up");
  cmd->add_option("--script", args->script, "File of steps (wait, allocate, prefer, end-pod, restart, exit)");
  cmd->add_option("--restart-after", args->restart_after_ms, "Simulate a kubelet restart after this many ms");
  cmd->add_option("--authority", args->authority,
                  "The :authority to dial plugins with: empty (default) sends the socket path, as kubelets 1.19-1.25 "
                  "do; 'localhost' as kubelets since 1.26 do");
  cmd->add_flag("--once", args->once, "Exit after the steps instead of serving until SIGINT/SIGTERM");
  cmd->add_option("--timeout", args->timeout_s, "Seconds each wait step may take")->capture_default_str();
  cmd->add_flag("--dra", args->dra, "Also act as the kubelet for DRA drivers (plugins_registry next to --dir)");
  cmd->add_option("--dra-kubelet-minor", args->dra_kubelet_minor, "Kubelet release 1.N to act as for DRA (32..36)")
      ->capture_default_str();
  cmd->add_option("--dra-claim", args->dra_claims, "ResourceClaim JSON file to prepare once the DRA plugin registers");
  cmd->add_flag("--dra-unprepare", args->dra_unprepare, "Unprepare the --dra-claim claims after preparing them");
  cmd->callback([args] { kgpu::cli::set_exit_code(run_sim(*args)); });
}
KGPU_COMMAND(setup_kubelet_sim);

}  // namespace
