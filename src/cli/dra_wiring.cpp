#include "cli/dra_wiring.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <filesystem>
#include <mutex>
#include <set>

#include <nlohmann/json.hpp>

#include "dra/claim_sharing.h"
#include "dra/api_share.h"
#include "dra/claim_store.h"
#include "dra/kubelet_plugin.h"
#include "dra/pcie_roots.h"
#include "dra/slice_builder.h"
#include "dra/slice_publisher.h"
#include "kube/api_request.h"
#include "kube/api_server.h"
#include "server/daemon.h"

namespace kgpu::cli {

namespace {

using namespace std::chrono_literals;

// The GPU a published device belongs to: its own UUID, or its parent's for a MIG device.
std::string gpu_uuid_of(const dra::DraDevice& d) {
  for (const char* name : {"parentUUID", "uuid"})
    if (const auto* v = d.attribute(name); v && std::holds_alternative<std::string>(*v))
      return std::get<std::string>(*v);
  return {};
}

// <root>/device-plugins/kubelet.sock -> <root>
std::string kubelet_root_of(const std::string& kubelet_socket) {
  return std::filesystem::path(kubelet_socket).parent_path().parent_path().string();
}

}  // namespace

struct DraWiring::Impl {
  DraConfig args;  // as configured at start-up
  std::string node_name;
  std::string kubelet_root;
  kube::ApiServer api;
  kube::Interrupter interrupter;
  std::unique_ptr<kube::ApiClient> client;
  dra::SliceOptions slice_options;
  std::unique_ptr<dra::SlicePublisher> publisher;
  std::unique_ptr<dra::ClaimStore> store;
  std::unique_ptr<dra::ClaimSharing> sharing;
  std::unique_ptr<dra::KubeletPlugin> plugin;
  std::mutex mu;
  std::string last_share_problem;  // unmatched kgpu.dra.gpus entries, logged once per change

  Result<std::string> fetch_claim(const std::string& ns, const std::string& name) const {
    std::string last;
    for (const char* version : {"v1", "v1beta2", "v1beta1"}) {
      auto answer = client->get("/apis/resource.k8s.io/" + std::string(version) + "/namespaces/" + ns +
                                    "/resourceclaims/" + name,
                                5s, 2 * 1024 * 1024);
      if (!answer) return answer.error();
      if (answer->status == 200) return answer->body;
      last = "HTTP " + std::to_string(answer->status);
      if (answer->status != 404) break;  // only a version the server lacks is worth another try
    }
    return Error::unavailable("GET ResourceClaim " + ns + "/" + name + ": " + last);
  }

  std::string node_uid() const {
    auto answer = client->get("/api/v1/nodes/" + node_name, 2s, 4 * 1024 * 1024);
    if (!answer || answer->status != 200) return {};
    auto doc = nlohmann::json::parse(answer->body, nullptr, false);
    if (!doc.is_object() || !doc.contains("metadata") || !doc["metadata"].is_object()) return {};
    const auto& uid = doc["metadata"].value("uid", nlohmann::json());
    return uid.is_string() ? uid.get<std::string>() : std::string();
  }

  std::vector<bool> owned(const Inventory& inventory) {
    auto share = dra::dra_share(inventory, args.gpus);
    std::string problem;
    for (const auto& entry : share.unmatched)
      problem += (problem.empty() ? "" : ", ") + ("\"" + entry + "\"");
    std::lock_guard lock(mu);
    if (problem != last_share_problem && !problem.empty())
      spdlog::error("DRA: kgpu.dra.gpus entries {} name no NVIDIA GPU of this node (index or UUID); the other "
                    "entries still apply",
                    problem);
    last_share_problem = problem;
    return std::move(share.owned);
  }
};

DraWiring::DraWiring(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DraWiring::~DraWiring() { stop(); }

Result<std::unique_ptr<DraWiring>> DraWiring::create(const Config& config,
                                                     const std::map<std::string, std::string>& env) {
  auto impl = std::make_unique<Impl>();
  impl->args = config.dra;
  const DraConfig& args = config.dra;
  auto node = env.find("NODE_NAME");
  if (node == env.end() || node->second.empty())
    return Error::invalid("DRA (kgpu.dra.enabled) needs the node's name in NODE_NAME (the chart sets it from spec.nodeName)");
  impl->node_name = node->second;
  auto api = kube::find_api_server(env);
  if (!api) return Error{api.error().code, "DRA (kgpu.dra.enabled) needs the API server: " + api.error().message};
  impl->api = *api;
  impl->client = std::make_unique<kube::ApiClient>(impl->api, impl->interrupter);
  impl->kubelet_root = kubelet_root_of(config.kubelet_socket);
  impl->slice_options.node_name = impl->node_name;
  impl->slice_options.drivers.nvidia = args.driver;
  dra::ClaimStoreOptions store_options;
  store_options.driver = args.driver;
  store_options.checkpoint_path = impl->kubelet_root + "/plugins/" + args.driver + "/kgpu-claims.json";
  store_options.cdi_dir = config.cdi_spec_dir;
  store_options.boot_id = dra::read_boot_id(config.proc_root);
  Impl* raw = impl.get();
  impl->store = std::make_unique<dra::ClaimStore>(
      store_options, [raw](const std::string& ns, const std::string& name) { return raw->fetch_claim(ns, name); });
  for (const auto& w : impl->store->startup_warnings()) spdlog::warn("DRA: {}", w);
  impl->sharing = std::make_unique<dra::ClaimSharing>(dra::find_nvidia_smi(config), dra::process_runner(30s));
  return std::unique_ptr<DraWiring>(new DraWiring(std::move(impl)));
}

std::function<ResourcePlan(const Inventory&, ResourcePlan)> DraWiring::api_share() {
  Impl* impl = impl_.get();
  return [impl](const Inventory& inventory, ResourcePlan plan) {
    if (!impl->args.device_plugin) return ResourcePlan{{}, std::move(plan.problems)};
    return dra::without_owned(std::move(plan), impl->owned(inventory));
  };
}

Status DraWiring::start(server::Daemon& daemon) {
  Impl& s = *impl_;
  s.slice_options.node_uid = s.node_uid();
  if (s.slice_options.node_uid.empty())
    spdlog::warn("DRA: cannot read Node {}'s uid; ResourceSlices are published without an owner", s.node_name);
  s.publisher = std::make_unique<dra::SlicePublisher>(s.api, s.slice_options);
  s.publisher->start();
  dra::ClaimHandler handler;
  dra::ClaimStore* store = s.store.get();
  const dra::ClaimSharing* sharing = s.sharing.get();
  handler.prepare = [store, sharing](const dra::ClaimRef& ref) -> Result<std::vector<dra::PreparedDevice>> {
    const auto before = store->prepared();
    const bool repeated = std::any_of(before.begin(), before.end(), [&](const auto& c) { return c.ref.uid == ref.uid; });
    auto prepared = store->prepare(ref);
    if (!prepared) return prepared.error();
    if (auto st = sharing->apply(store->prepared(), *prepared); !st) {
      // A claim prepared by this call is rolled back, so the kubelet's retry starts afresh; one
      // prepared earlier (its containers may run) stays until the kubelet unprepares it.
      if (!repeated) (void)store->unprepare(ref.uid);
      return st.error();
    }
    return prepared->devices;
  };
  handler.unprepare = [store, sharing](const dra::ClaimRef& ref) -> Status {
    auto released = store->unprepare(ref.uid);
    if (!released) return released.error();
    if (*released)
      if (auto st = sharing->undo(store->prepared(), **released); !st)
        spdlog::error("DRA: claim {} unprepared, but its sharing was not undone: {}", ref.uid, st.error().message);
    return ok_status();
  };
  dra::KubeletPluginOptions plugin_options{s.args.driver, s.kubelet_root, {}};
  dra::SlicePublisher* publisher = s.publisher.get();
  plugin_options.on_registered = [publisher] { publisher->resync(); };  // only wakes its worker
  s.plugin = std::make_unique<dra::KubeletPlugin>(plugin_options, handler, daemon.transport());
  return s.plugin->start();
}

void DraWiring::on_plan(const Config& config, const Inventory& inventory, const ResourcePlan&) {
  Impl& s = *impl_;
  auto options = s.slice_options;
  options.pcie_roots = dra::read_pcie_roots(config.sysfs_root, inventory);
  auto publication = dra::build_publication(inventory, options);
  if (!publication) {
    spdlog::error("DRA: cannot build the ResourceSlices: {}", publication.error().message);
    return;
  }
  auto owned = s.owned(inventory);
  std::set<std::string> owned_uuids;
  for (size_t i = 0; i < inventory.gpus.size(); ++i)
    if (owned[i]) owned_uuids.insert(inventory.gpus[i].uuid);
  auto devices = std::make_shared<dra::NodeDevices>();
  std::erase_if(publication->pools, [&](const dra::DriverPool& p) { return p.driver != s.args.driver; });
  for (auto& pool : publication->pools) {
    std::erase_if(pool.devices, [&](const dra::DraDevice& d) { return !owned_uuids.count(gpu_uuid_of(d)); });
    devices->pool = pool;
  }
  devices->config = config;
  devices->inventory = inventory;
  s.store->set_devices(std::move(devices));
  if (s.publisher) s.publisher->publish(std::move(publication->pools));
}

void DraWiring::stop() {
  if (!impl_) return;
  if (impl_->plugin) impl_->plugin->stop();
  impl_->interrupter.stop();
  if (impl_->publisher) impl_->publisher->stop();
}

}  // namespace kgpu::cli
