// `kgpu probe SOCKET`: talks to any device plugin socket as the kubelet would: GetDevicePluginOptions,
// one ListAndWatch snapshot, and optionally Allocate / GetPreferredAllocation. For operators.
#include <grpcpp/grpcpp.h>

#include <iostream>
#include <sstream>

#include "cli/command.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "server/edits_proto.h"
#include "server/plugin_client.h"
#include "sim/sim_steps.h"

namespace {

struct ProbeArgs {
  std::string socket;
  std::string allocate;  // comma-separated IDs
  int prefer = 0;
  int timeout_s = 5;
};

std::vector<std::string> split_ids(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream in(s);
  for (std::string id; std::getline(in, id, ',');)
    if (!id.empty()) out.push_back(id);
  return out;
}

std::chrono::system_clock::time_point deadline(int seconds) {
  return std::chrono::system_clock::now() + std::chrono::seconds(seconds);
}

int run_probe(const ProbeArgs& args) {
  auto channel = grpc::CreateChannel("unix:" + args.socket, grpc::InsecureChannelCredentials());
  auto stub = v1beta1::DevicePlugin::NewStub(channel);

  v1beta1::DevicePluginOptions options;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline(args.timeout_s));
    auto st = stub->GetDevicePluginOptions(&ctx, v1beta1::Empty{}, &options);
    if (!st.ok()) {
      std::cerr << "probe: GetDevicePluginOptions on " << args.socket << ": " << st.error_message() << "\n";
      return 1;
    }
  }
  std::cout << "options: pre_start_required=" << std::boolalpha << options.pre_start_required()
            << " get_preferred_allocation_available=" << options.get_preferred_allocation_available() << "\n";

  auto listed = kgpu::server::read_device_list(args.socket, std::chrono::seconds(args.timeout_s));
  if (!listed) {
    std::cerr << "probe: " << listed.error().message << "\n";
    return 1;
  }
  const v1beta1::ListAndWatchResponse& list = *listed;
  std::cout << "devices: " << list.devices_size() << "\n";
  std::vector<std::string> healthy;
  for (const auto& d : list.devices()) {
    std::cout << "  " << d.id() << "  " << d.health();
    if (d.topology().nodes_size() > 0) {
      std::cout << "  numa";
      for (const auto& n : d.topology().nodes()) std::cout << " " << n.id();
    }
    std::cout << "\n";
    if (d.health() == "Healthy") healthy.push_back(d.id());
  }

  if (args.prefer > 0) {
    v1beta1::PreferredAllocationRequest req;
    auto* c = req.add_container_requests();
    for (const auto& id : healthy) c->add_available_deviceids(id);
    c->set_allocation_size(args.prefer);
    v1beta1::PreferredAllocationResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline(args.timeout_s));
    auto st = stub->GetPreferredAllocation(&ctx, req, &resp);
    if (!st.ok()) {
      std::cerr << "probe: GetPreferredAllocation: " << st.error_message() << "\n";
      return 1;
    }
    std::cout << "preferred " << args.prefer << ":";
    for (const auto& id : resp.container_responses(0).deviceids()) std::cout << " " << id;
    std::cout << "\n";
  }

  if (!args.allocate.empty()) {
    v1beta1::AllocateRequest req;
    auto* c = req.add_container_requests();
    for (const auto& id : split_ids(args.allocate)) c->add_devices_ids(id);
    v1beta1::AllocateResponse resp;
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline(args.timeout_s));
    auto st = stub->Allocate(&ctx, req, &resp);
    if (!st.ok()) {
      std::cerr << "probe: Allocate: " << st.error_message() << "\n";
      return 1;
    }
    std::cout << "allocate " << args.allocate << ":\n";
    for (const auto& cr : resp.container_responses()) kgpu::sim::print_edits(kgpu::server::from_proto(cr), std::cout);
  }
  return 0;
}

void setup_probe(CLI::App& root) {
  auto args = std::make_shared<ProbeArgs>();
  auto* cmd = root.add_subcommand("probe", "Talk to a device plugin socket as the kubelet would");
  cmd->add_option("socket", args->socket, "Path of the plugin's unix socket")->required();
  cmd->add_option("--allocate", args->allocate, "Allocate these comma-separated device IDs");
  cmd->add_option("--prefer", args->prefer, "Ask GetPreferredAllocation for this many healthy devices");
  cmd->add_option("--timeout", args->timeout_s, "Seconds per call")->capture_default_str();
  cmd->callback([args] { kgpu::cli::set_exit_code(run_probe(*args)); });
}
KGPU_COMMAND(setup_probe);

}  // namespace
