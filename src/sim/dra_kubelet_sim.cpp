#include "sim/dra_kubelet_sim.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <thread>

#include "dra/v1/dra.grpc.pb.h"
#include "dra/v1beta1/dra.grpc.pb.h"
#include "pluginregistration/v1/registration.grpc.pb.h"

namespace kgpu::sim {

namespace fs = std::filesystem;
namespace v1 = k8s::io::kubelet::pkg::apis::dra::v1;
namespace v1beta1 = k8s::io::kubelet::pkg::apis::dra::v1beta1;

namespace {

std::shared_ptr<grpc::Channel> channel(const std::string& path) {
  return grpc::CreateChannel("unix:" + path, grpc::InsecureChannelCredentials());
}

std::chrono::system_clock::time_point deadline(std::chrono::milliseconds timeout) {
  return std::chrono::system_clock::now() + timeout;
}

// The services a kubelet of release 1.<minor> speaks, as it matches them against the plugin's list.
std::vector<std::string> kubelet_services(int minor) {
  if (minor >= 34) return {"v1.DRAPlugin", "v1beta1.DRAPlugin"};
  return {"v1beta1.DRAPlugin"};
}

template <typename Request>
void fill(Request& req, const std::vector<DraClaim>& claims) {
  for (const auto& c : claims) {
    auto* claim = req.add_claims();
    claim->set_namespace_(c.namespace_name);
    claim->set_name(c.name);
    claim->set_uid(c.uid);
  }
}

template <typename Response>
std::map<std::string, DraPrepared> prepared_of(const Response& resp) {
  std::map<std::string, DraPrepared> out;
  for (const auto& [uid, claim] : resp.claims()) {
    DraPrepared p;
    p.error = claim.error();
    for (const auto& d : claim.devices())
      p.devices.push_back({{d.request_names().begin(), d.request_names().end()}, d.pool_name(), d.device_name(),
                           {d.cdi_device_ids().begin(), d.cdi_device_ids().end()}});
    out[uid] = std::move(p);
  }
  return out;
}

}  // namespace

DraKubeletSim::DraKubeletSim(std::string kubelet_root, int kubelet_minor)
    : root_(std::move(kubelet_root)), minor_(kubelet_minor) {}

Result<DraPlugin> DraKubeletSim::register_plugin(const std::string& socket) {
  auto stub = pluginregistration::Registration::NewStub(channel(socket));
  pluginregistration::PluginInfo info;
  {
    grpc::ClientContext ctx;
    ctx.set_deadline(deadline(std::chrono::seconds(1)));  // the kubelet's GetInfo timeout
    auto st = stub->GetInfo(&ctx, pluginregistration::InfoRequest{}, &info);
    if (!st.ok()) return Error::unavailable("GetInfo on " + socket + ": " + st.error_message());
  }
  std::string refusal;
  std::string picked;
  if (info.type() != "DRAPlugin") refusal = "plugin type " + info.type() + " is not DRAPlugin";
  auto known = kubelet_services(minor_);
  for (const auto& v : info.supported_versions())  // the plugin's order, as kubelet 1.34+ walks it
    if (picked.empty() && std::find(known.begin(), known.end(), v) != known.end()) picked = v;
  if (refusal.empty() && picked.empty()) refusal = "none of the services supported by the plugin are supported by the kubelet";
  if (refusal.empty() && plugins_.count(info.name())) refusal = "driver " + info.name() + " is already registered";
  pluginregistration::RegistrationStatus status;
  status.set_plugin_registered(refusal.empty());
  status.set_error(refusal);
  grpc::ClientContext ctx;
  ctx.set_deadline(deadline(std::chrono::seconds(5)));
  pluginregistration::RegistrationStatusResponse ignored;
  stub->NotifyRegistrationStatus(&ctx, status, &ignored);
  if (!refusal.empty()) return Error::precondition(refusal);
  DraPlugin plugin{info.name(), info.endpoint().empty() ? socket : info.endpoint(), picked, socket};
  plugin.health = std::find(info.supported_versions().begin(), info.supported_versions().end(),
                            "v1alpha1.DRAResourceHealth") != info.supported_versions().end();
  plugins_[plugin.driver] = plugin;
  return plugin;
}

Result<DraPlugin> DraKubeletSim::wait_for_plugin(std::chrono::milliseconds timeout) {
  auto end = std::chrono::steady_clock::now() + timeout;
  std::string last_error = "no registration socket in " + root_ + "/plugins_registry";
  do {
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(root_ + "/plugins_registry", ec)) {
      std::string name = e.path().filename().string();
      if (name.empty() || name[0] == '.' || !e.is_socket(ec)) continue;  // as the plugin watcher
      bool known = std::any_of(plugins_.begin(), plugins_.end(),
                               [&](const auto& p) { return p.second.registration_socket == e.path().string(); });
      if (known) continue;
      auto plugin = register_plugin(e.path().string());
      if (plugin) return plugin;
      last_error = plugin.error().message;
      if (plugin.error().code == Error::Code::FailedPrecondition) return plugin.error();
    }
    std::this_thread::yield();  // polling a folder, as the watcher's fsnotify would tell it
  } while (std::chrono::steady_clock::now() < end);
  return Error::unavailable(last_error);
}

namespace {

// One call through the DRA service of API version `Api` (v1 or v1beta1: the same messages).
template <typename Api, typename Request, typename Response, typename Call>
grpc::Status call_dra(const std::string& endpoint, std::chrono::milliseconds timeout, const std::vector<DraClaim>& claims,
                      Response& response, Call call) {
  grpc::ClientContext ctx;
  ctx.set_deadline(deadline(timeout));
  Request req;
  fill(req, claims);
  auto stub = Api::NewStub(channel(endpoint));
  return ((*stub).*call)(&ctx, req, &response);
}

}  // namespace

Result<std::map<std::string, DraPrepared>> DraKubeletSim::prepare(const std::string& driver,
                                                                  const std::vector<DraClaim>& claims,
                                                                  std::chrono::milliseconds timeout) {
  auto it = plugins_.find(driver);
  if (it == plugins_.end()) return Error::not_found("driver " + driver + " is not registered");
  grpc::Status st;
  std::map<std::string, DraPrepared> out;
  if (it->second.service == "v1.DRAPlugin") {
    v1::NodePrepareResourcesResponse resp;
    st = call_dra<v1::DRAPlugin, v1::NodePrepareResourcesRequest>(it->second.endpoint, timeout, claims, resp,
                                                                    &v1::DRAPlugin::Stub::NodePrepareResources);
    out = prepared_of(resp);
  } else {
    v1beta1::NodePrepareResourcesResponse resp;
    st = call_dra<v1beta1::DRAPlugin, v1beta1::NodePrepareResourcesRequest>(
        it->second.endpoint, timeout, claims, resp, &v1beta1::DRAPlugin::Stub::NodePrepareResources);
    out = prepared_of(resp);
  }
  if (!st.ok()) return Error::unavailable("NodePrepareResources: " + st.error_message());
  return out;
}

Result<std::map<std::string, std::string>> DraKubeletSim::unprepare(const std::string& driver,
                                                                    const std::vector<DraClaim>& claims,
                                                                    std::chrono::milliseconds timeout) {
  auto it = plugins_.find(driver);
  if (it == plugins_.end()) return Error::not_found("driver " + driver + " is not registered");
  grpc::Status st;
  std::map<std::string, std::string> out;
  auto collect = [&](const auto& resp) {
    for (const auto& [uid, r] : resp.claims()) out[uid] = r.error();
  };
  if (it->second.service == "v1.DRAPlugin") {
    v1::NodeUnprepareResourcesResponse resp;
    st = call_dra<v1::DRAPlugin, v1::NodeUnprepareResourcesRequest>(it->second.endpoint, timeout, claims, resp,
                                                                      &v1::DRAPlugin::Stub::NodeUnprepareResources);
    collect(resp);
  } else {
    v1beta1::NodeUnprepareResourcesResponse resp;
    st = call_dra<v1beta1::DRAPlugin, v1beta1::NodeUnprepareResourcesRequest>(
        it->second.endpoint, timeout, claims, resp, &v1beta1::DRAPlugin::Stub::NodeUnprepareResources);
    collect(resp);
  }
  if (!st.ok()) return Error::unavailable("NodeUnprepareResources: " + st.error_message());
  return out;
}

}  // namespace kgpu::sim
