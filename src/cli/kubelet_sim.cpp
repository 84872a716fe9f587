// `kgpu kubelet-sim`: the kubelet stand-in (server::KubeletSim) as a command. Serves Registration
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
#include <signal.h>

#include <chrono>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>

#include "cli/command.h"
#include "server/sim_steps.h"
#include "server/kubelet_sim.h"

namespace {

struct SimArgs {
  std::string dir;
  std::vector<std::string> allocations;  // RESOURCE=ID,ID or RESOURCE=N
  std::string script;
  int restart_after_ms = -1;
  bool once = false;
  int timeout_s = 30;
};

int run_sim(const SimArgs& args) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before gRPC starts threads; sigwait below

  kgpu::sim::KubeletSim sim(args.dir);
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
  cmd->add_flag("--once", args->once, "Exit after the steps instead of serving until SIGINT/SIGTERM");
  cmd->add_option("--timeout", args->timeout_s, "Seconds each wait step may take")->capture_default_str();
  cmd->callback([args] { kgpu::cli::set_exit_code(run_sim(*args)); });
}
KGPU_COMMAND(setup_kubelet_sim);

}  // namespace
