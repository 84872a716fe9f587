#include "cli/dra_wiring.h"

#include "cli/dynamic_mig_facts.h"
#include "cli/share_daemon_watch.h"

#include <spdlog/spdlog.h>
#include <sys/eventfd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>

#include "cdi/cdi.h"
#include "core/unique_fd.h"
#include "dra/api_share.h"
#include "dra/claim_metadata.h"
#include "dra/claims/claim_handler.h"
#include "dra/claims/claim_store.h"
#include "dra/claims/nvml_mig_control.h"
#include "dra/health/device_health.h"
#include "dra/health/health_streams.h"
#include "dra/health/metadata_files.h"
#include "dra/health/pod_claim_name.h"
#include "dra/kubelet_plugin.h"
#include "dra/model/publication.h"
#include "dra/publish/pcie_roots.h"
#include "dra/publish/resource_api.h"
#include "dra/publish/slice_objects.h"
#include "dra/publish/slice_publisher.h"
#include "dra/sharing/claim_sharing.h"
#include "dra/sharing/memory_shares.h"
#include "dra/sharing/share_usage.h"
#include "kube/api_request.h"
#include "kube/api_server.h"
#include "mps/readiness.h"
#include "plan/mps_paths.h"
#include "podresources/client.h"
#include "server/daemon.h"

namespace kgpu::cli {

namespace {

using namespace std::chrono_literals;

// <root>/device-plugins/kubelet.sock -> <root>
std::string kubelet_root_of(const std::string& kubelet_socket) {
  return std::filesystem::path(kubelet_socket).parent_path().parent_path().string();
}

// The claim's pod-claim-name annotation, for its device metadata; a bad one is left out (warned).
void note_pod_claim_name(dra::health::MetadataFiles& metadata, const std::string& ns, const std::string& name,
                         const std::string& claim_text) {
  auto pod = dra::health::pod_claim_name(claim_text);
  if (!pod)
    spdlog::warn("DRA: claim {}/{}: device metadata without the pod's claim name: {}", ns, name, pod.error().message);
  metadata.note_claim(ns, name, pod ? *pod : std::nullopt);
}

}  // namespace

// One DRA driver kgpu serves (a vendor of kgpu.dra.vendors): its claims and its kubelet plugin.
struct ServedDriver {
  std::string name;  // "gpu.nvidia.com"
  std::unique_ptr<dra::ClaimStore> store;
  std::unique_ptr<dra::KubeletPlugin> plugin;
  // The kubelet's DRAResourceHealth streams: every plan's health of the driver's devices.
  std::unique_ptr<dra::health::HealthStreams> health;
  // Device metadata files of its prepared claims (kgpu.dra.deviceMetadata); null when off.
  std::unique_ptr<dra::health::MetadataFiles> metadata;
};

struct DraWiring::Impl {
  DraConfig args;  // as configured at start-up
  std::atomic<bool> mig_bound{false};  // use_nvml handed the stores their MIG control
  std::string node_name;
  std::string kubelet_root;
  kube::ApiServer api;
  kube::Interrupter interrupter;  // stop() ends a claim read in flight
  // resource.k8s.io's served versions, read once for the slices and the claims.
  std::shared_ptr<dra::ResourceApiDiscovery> discovery = std::make_shared<dra::ResourceApiDiscovery>();
  std::unique_ptr<dra::ClaimReader> claims;
  dra::SliceOptions slice_options;
  std::unique_ptr<dra::SlicePublisher> publisher;
  std::vector<ServedDriver> drivers;
  std::unique_ptr<dra::ClaimSharing> sharing;
  UniqueFd cancel{::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)};  // readable once stop() began: ends a program run
  std::mutex mu;
  std::string last_share_problem;  // unmatched kgpu.dra.gpus entries, logged once per change
  // The driver files claim specs inject, as the device-plugin spec does; scanned again only when
  // the driver version or a root changes (a scan lists the driver's library folder).
  std::string driver_files_key;
  std::optional<DriverFiles> driver_files;
  // Holds that outrank the configured split (issue 28, item 1): claims prepared on a GPU the config
  // now gives the device-plugin API, pods holding a GPU it now gives DRA. The kubelet's
  // PodResources API is asked until an answer shows no pod on a DRA GPU, then never again (no pod
  // can get a GPU the device-plugin API does not advertise).
  std::string pod_resources_socket;
  std::function<void()> replan;            // set by start(): the daemon plans again
  std::function<void(bool)> on_pod_holds;  // true: re-plan now and then until the pods are gone
  bool pods_settled = false;               // loop thread only
  bool pods_unknown_warned = false;        // loop thread only
  std::vector<dra::GpuHold> last_pod_holds;  // loop thread only
  std::vector<std::string> overrides;        // under mu
  std::vector<std::string> hidden;           // under mu: devices left out of the slices (held hardware)
  std::vector<bool> last_owned;              // under mu
  std::vector<std::string> last_share_notes;  // loop thread only: kgpu.dra.sharing.memory notes logged
  std::vector<std::string> last_publication_warnings;  // loop thread only: Publication::warnings logged
  std::set<std::string> shared_gpus;                 // under mu: published for memory shares now
  std::unique_ptr<ShareDaemonWatch> share_watch;     // the daemons of GPUs with shares (start(): replans)
  std::string mps_root;
  std::shared_ptr<const Inventory> last_inventory;  // under mu: for the share metrics
  // kgpu.dra.mig.dynamic (loop thread only): NVML's profiles of the named GPUs, and what was logged.
  std::shared_ptr<NvmlLibrary> nvml;  // the latest use_nvml() handed over
  DynamicMigFacts dynamic_mig;
  std::vector<std::string> last_dynamic_warnings;

  // The MIG uuids of the instances kgpu created for prepared claims: their GPUs stay dynamic and
  // they are published as the placement device at their position, not as static MIG devices.
  // The claim stores record them (ClaimStore::created_mig_uuids: prepared claims' and prepares in
  // flight), so a re-discovery while they exist keeps their GPU dynamic.
  std::set<std::string> kgpu_created_mig_uuids() const {
    std::set<std::string> out;
    for (const auto& driver : drivers) out.merge(driver.store->created_mig_uuids());
    return out;
  }

  // The daemon of each GPU with prepared memory shares is watched; while it is not ready its GPU's
  // devices are tainted (dra::taint_gpus_without_share_daemon).
  void watch_share_daemons(std::vector<dra::DriverPool>& pools, const std::vector<dra::PreparedClaim>& prepared) {
    std::set<std::string> without_daemon;
    std::vector<std::string> folders;
    for (const auto& uuid : dra::share_daemon_gpus(prepared)) {
      const std::string resource = mps_claim_resource(dra::share_daemon_name(uuid));
      folders.push_back(mps_root + "/" + resource);
      if (!mps_marker_live(mps_ready_marker(mps_root, resource))) without_daemon.insert(uuid);
    }
    for (const auto& device : dra::taint_gpus_without_share_daemon(pools, without_daemon))
      spdlog::warn("DRA memory shares: the MPS daemon of {} is not ready; its memory shares have no daemon and no new "
                   "share is prepared until it is back",
                   device);
    if (share_watch) share_watch->watch(std::move(folders));
  }

  // Notes on kgpu.dra.sharing.memory (entries matching nothing, GPUs in MIG mode), logged when they change.
  void note_share_problems(const std::vector<std::string>& notes) { log_new(notes, last_share_notes, "DRA memory shares"); }
  // The publication's warnings (API limits kept by leaving attributes or devices out), logged when new.
  // Why named GPUs are not dynamic, logged when new.
  void note_dynamic_mig_warnings(const std::vector<std::string>& warnings) {
    log_new(warnings, last_dynamic_warnings, "DRA dynamic MIG");
  }
  void note_publication_warnings(const std::vector<std::string>& warnings) {
    log_new(warnings, last_publication_warnings, "DRA slices");
  }
  static void log_new(const std::vector<std::string>& lines, std::vector<std::string>& last, const char* what) {
    if (lines == last) return;
    for (const auto& n : lines)
      if (std::find(last.begin(), last.end(), n) == last.end()) spdlog::warn("{}: {}", what, n);
    last = lines;
  }

  bool serves(const std::string& driver) const {
    return std::any_of(drivers.begin(), drivers.end(), [&](const ServedDriver& d) { return d.name == driver; });
  }

  std::optional<DriverFiles> driver_files_for(const Config& config, const Inventory& inventory) {
    if (inventory.driver_version.empty()) return std::nullopt;  // no NVIDIA driver on this node
    std::string key = cdi_scan_root(config) + "|" + config.dev_root() + "|" + inventory.driver_version;
    if (key == driver_files_key) return driver_files;
    driver_files_key = std::move(key);
    auto files = scan_driver_files(config, inventory);
    if (!files) {
      spdlog::warn("DRA: claim CDI specs carry no driver files ({}); a container gets CUDA only from a runtime that "
                   "reads NVIDIA_VISIBLE_DEVICES (nvidia-container-runtime)",
                   files.error().message);
      driver_files.reset();
    } else {
      for (const auto& w : files->warnings) spdlog::warn("DRA: claim CDI specs: {}", w);
      driver_files = std::move(*files);
    }
    return driver_files;
  }

  // The GPUs DRA serves now; `full_plan`: the device-plugin plan before the split (null: reuse the
  // pods' holds found last). Called on the daemon's loop thread.
  std::vector<bool> owners(const Inventory& inventory, const ResourcePlan* full_plan) {
    std::vector<dra::PreparedClaim> prepared;
    for (const auto& driver : drivers)
      for (auto& c : driver.store->prepared()) prepared.push_back(std::move(c));
    auto claims_hold = dra::claim_holds(inventory, prepared);
    for (const auto& driver : drivers)
      for (const auto& [uid, devices] : driver.store->recovered_claims())
        for (const auto& d : devices)
          if (auto gpu = dra::gpu_of_device(inventory, d))
            claims_hold.push_back({*gpu, "claim " + uid + " (known from its CDI spec)"});
    const auto configured = owned_by_config(inventory);
    if (full_plan) refresh_pod_holds(inventory, *full_plan, configured);
    auto result = dra::api_owners(inventory, configured, claims_hold, last_pod_holds);
    std::lock_guard lock(mu);
    for (const auto& o : result.overrides)
      if (std::find(overrides.begin(), overrides.end(), o) == overrides.end()) spdlog::warn("DRA: {}", o);
    for (const auto& o : overrides)
      if (std::find(result.overrides.begin(), result.overrides.end(), o) == result.overrides.end())
        spdlog::info("DRA: released, the configuration applies again: {}", o);
    overrides = std::move(result.overrides);
    last_owned = result.owned;
    return std::move(result.owned);
  }

  void refresh_pod_holds(const Inventory& inventory, const ResourcePlan& full_plan, const std::vector<bool>& configured) {
    if (pods_settled) return;
    auto pods = podresources::list(pod_resources_socket, std::chrono::seconds(1));
    if (!pods) {
      if (!pods_unknown_warned)
        spdlog::warn("DRA: cannot ask the kubelet which pods hold GPUs ({}); a GPU a pod got from the device-plugin "
                     "API before kgpu.dra.gpus changed may be prepared for a claim; asked again at the next plan",
                     pods.error().message);
      pods_unknown_warned = true;
      return;
    }
    last_pod_holds = dra::pod_holds(inventory, full_plan, *pods);
    std::erase_if(last_pod_holds, [&](const dra::GpuHold& h) { return h.gpu >= configured.size() || !configured[h.gpu]; });
    pods_settled = last_pod_holds.empty();
    if (on_pod_holds) on_pod_holds(!pods_settled);
  }

  // After an unprepare: something the last plan kept from its configured owner, or left out of
  // the slices, may be free again.
  bool has_overrides() {
    std::lock_guard lock(mu);
    return !overrides.empty() || !hidden.empty();
  }

  void note_hidden(std::vector<std::string> now) {
    std::lock_guard lock(mu);
    for (const auto& h : now)
      if (std::find(hidden.begin(), hidden.end(), h) == hidden.end()) spdlog::warn("DRA: {}", h);
    hidden = std::move(now);
  }

  std::vector<bool> owned_by_config(const Inventory& inventory) {
    auto share = dra::dra_share(inventory, args);
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
    return Error::invalid(
        "DRA (kgpu.dra.enabled) needs the node's name in NODE_NAME (the chart sets it from spec.nodeName)");
  impl->node_name = node->second;
  auto api = kube::find_api_server(env);
  if (!api) return Error{api.error().code, "DRA (kgpu.dra.enabled) needs the API server: " + api.error().message};
  impl->api = *api;
  impl->claims = std::make_unique<dra::ClaimReader>(impl->discovery, impl->api, impl->interrupter);
  impl->kubelet_root = kubelet_root_of(config.kubelet_socket);
  impl->pod_resources_socket = podresources::socket_for(config.kubelet_socket);
  impl->slice_options.node_name = impl->node_name;
  impl->mps_root = config.mps_root;
  impl->slice_options.drivers = dra::driver_names(args);
  const std::string boot_id = dra::read_boot_id(config.proc_root);
  Impl* raw = impl.get();
  for (const auto& driver : dra::served_drivers(args)) {
    dra::ClaimStoreOptions store_options;
    store_options.driver = driver;
    store_options.checkpoint_path = dra::claim_checkpoint_path(config.kubelet_socket, driver);
    store_options.cdi_dir = config.cdi_spec_dir;
    store_options.boot_id = boot_id;
    ServedDriver served{driver, nullptr, nullptr, std::make_unique<dra::health::HealthStreams>(driver), nullptr};
    if (args.device_metadata)
      served.metadata = std::make_unique<dra::health::MetadataFiles>(
          dra::health::MetadataLayout{driver, impl->kubelet_root + "/plugins/" + driver, config.cdi_spec_dir});
    served.store = std::make_unique<dra::ClaimStore>(
        store_options, [raw, metadata = served.metadata.get()](const std::string& ns, const std::string& name) {
          auto body = raw->claims->fetch(ns, name);
          if (body && metadata) note_pod_claim_name(*metadata, ns, name, *body);
          return body;
        });
    for (const auto& w : served.store->startup_warnings()) spdlog::warn("DRA {}: {}", driver, w);
    impl->drivers.push_back(std::move(served));
  }
  auto runner = dra::process_runner(30s, impl->cancel.get());
  dra::ClaimMpsOptions mps_options;
  mps_options.mps_root = config.mps_root;
  mps_options.cancel_fd = impl->cancel.get();
  impl->sharing = std::make_unique<dra::ClaimSharing>(dra::find_nvidia_smi(config), std::move(runner),
                                                      dra::ClaimMps(std::move(mps_options)));
  return std::unique_ptr<DraWiring>(new DraWiring(std::move(impl)));
}

std::function<ResourcePlan(const Inventory&, ResourcePlan)> DraWiring::api_share() {
  Impl* impl = impl_.get();
  return [impl](const Inventory& inventory, ResourcePlan plan) {
    auto owned = impl->owners(inventory, &plan);
    if (!impl->args.device_plugin) return ResourcePlan{{}, std::move(plan.problems)};
    return dra::without_owned(std::move(plan), owned);
  };
}

Status DraWiring::start(server::Daemon& daemon) {
  Impl& s = *impl_;
  // The publisher covers only the drivers kgpu serves: another vendor's DRA driver on this node
  // publishes its own slices, which kgpu must never delete. It reads the Node's uid for the slices'
  // owner itself (node_uid empty), in its worker: start-up never waits on the API server.
  auto publisher_options = s.slice_options;
  for (std::string* name : {&publisher_options.drivers.nvidia, &publisher_options.drivers.amd,
                            &publisher_options.drivers.intel})
    if (!s.serves(*name)) name->clear();
  s.replan = [&daemon] { daemon.update_inventory([](const Inventory& i) { return i; }); };
  s.publisher = std::make_unique<dra::SlicePublisher>(s.api, publisher_options, std::nullopt, s.discovery);
  // Prepares follow the slices: once shared GPUs go out whole, plan again so the claim stores see
  // them whole too (a claim allocated one then is exclusive, not refused for its missing shareID).
  s.publisher->on_shares_refused([impl = &s] { impl->replan(); });
  s.publisher->on_counters_refused([impl = &s] { impl->replan(); });
  s.share_watch = std::make_unique<ShareDaemonWatch>([impl = &s] { impl->replan(); });
  s.publisher->start();
  s.publisher->start_watch();  // puts back a slice someone else deletes or edits
  dra::SlicePublisher* publisher = s.publisher.get();

  for (auto& driver : s.drivers)
    if (!driver.store->pending_resets().empty()) dra::retry_pending_resets(*driver.store, *s.sharing, "at start");
  for (auto& driver : s.drivers) {
    dra::KubeletPluginOptions plugin_options{driver.name, s.kubelet_root, {}};
    plugin_options.on_registered = [publisher] { publisher->resync(); };  // only wakes its worker
    plugin_options.health_watch = [health = driver.health.get()](std::shared_ptr<rpc::ServerStream> stream) {
      health->watch(std::move(stream));
    };
    auto handler = dra::claim_handler(
        driver.store.get(), s.sharing.get(),
        [impl = &s] {
          if (impl->has_overrides() && impl->replan) impl->replan();
        },
        [impl = &s] { impl->replan(); });
    if (driver.metadata) handler = dra::with_device_metadata(std::move(handler), driver.store.get(), driver.metadata.get());
    if (driver.metadata)
      for (const auto& w : driver.metadata->remove_orphans(driver.store->prepared()))
        spdlog::warn("DRA {}: {}", driver.name, w);
    driver.plugin = std::make_unique<dra::KubeletPlugin>(plugin_options, std::move(handler), daemon.transport());
    if (auto st = driver.plugin->start(); !st) return st;
  }
  return ok_status();
}

void DraWiring::on_plan(const Config& config, const Inventory& inventory, const ResourcePlan&) {
  Impl& s = *impl_;
  auto options = s.slice_options;
  options.pcie_roots = dra::read_pcie_roots(config.sysfs_root, inventory);
  options.no_execute_xids = config.dra.no_execute_xids;
  std::vector<bool> owned;
  {
    std::lock_guard lock(s.mu);
    owned = s.last_owned;
  }
  if (owned.size() != inventory.gpus.size()) owned = s.owners(inventory, nullptr);
  auto shares = dra::memory_share_options(inventory, config.dra.memory_sharing, owned);
  s.note_share_problems(shares.notes);
  {
    std::lock_guard lock(s.mu);
    s.shared_gpus = shares.gpus;
    s.last_inventory = std::make_shared<const Inventory>(inventory);
  }
  options.memory_shared_gpus = std::move(shares.gpus);
  options.memory_policy = shares.memory_policy;
  options.multiprocessors_default = shares.multiprocessors_default;
  const auto dynamic = s.dynamic_mig.select(config, inventory, s.nvml,
                                            s.kgpu_created_mig_uuids());
  s.note_dynamic_mig_warnings(dynamic.warnings);
  options.dynamic_mig = dra::dynamic_mig_layouts(dynamic);
  auto publication = dra::build_publication(inventory, options);
  if (!publication) {
    spdlog::error("DRA: cannot build the ResourceSlices: {}", publication.error().message);
    return;
  }
  s.note_publication_warnings(publication->warnings);
  auto pools = dra::served_pools(std::move(publication->pools), inventory, s.args, owned);
  std::vector<dra::PreparedClaim> prepared;
  for (const auto& driver : s.drivers)
    for (auto& c : driver.store->prepared()) prepared.push_back(std::move(c));
  s.note_hidden(dra::hide_devices_held_elsewhere(pools, prepared));
  s.watch_share_daemons(pools, prepared);
  // The same health as the slices' taints, to the kubelet's health streams (pod status).
  for (auto& driver : s.drivers) {
    std::vector<dra::health::DeviceHealthReport> reports;
    for (const auto& pool : pools)
      if (pool.driver == driver.name) reports = dra::health::pool_health(pool, inventory, config.health);
    driver.health->update(std::move(reports));
  }
  std::shared_ptr<const Inventory> shared_inventory;
  {
    std::lock_guard lock(s.mu);
    shared_inventory = s.last_inventory;
  }
  for (auto& driver : s.drivers) {
    if (!driver.metadata) continue;
    dra::DriverPool published{driver.name, s.node_name, {}};
    for (const auto& pool : pools)
      if (pool.driver == driver.name) published = pool;
    driver.metadata->set_devices(std::move(published), shared_inventory);
  }
  for (auto& driver : s.drivers) {
    auto devices = std::make_shared<dra::NodeDevices>();
    devices->pool = {driver.name, s.node_name, {}};  // no GPU of this vendor now: an empty pool
    // Claims are prepared on healthy devices only: a device published with a health taint is not
    // prepared for a new claim, even one that tolerates the taint.
    // Shared GPUs as the API server holds them: whole once it was found not to keep shares.
    const bool shares_served = !s.publisher || s.publisher->shares_served();
    // Dynamic GPUs as the API server holds them: their full device only once it was found not to
    // keep shared counters.
    const bool counters_served = !s.publisher || s.publisher->counters_served();
    for (const auto& pool : pools)
      if (pool.driver == driver.name)
        devices->pool = dra::with_counter_support(
            dra::with_share_support(dra::with_taint_support(pool, dra::TaintSupport::Off), shares_served),
            counters_served);
    if (driver.name == s.slice_options.drivers.nvidia && counters_served)
      for (const auto& layout : options.dynamic_mig)
        if (std::any_of(devices->pool.counter_sets.begin(), devices->pool.counter_sets.end(),
                        [&](const dra::CounterSet& set) { return set.name == layout.counter_set; }))
          devices->dynamic_mig.push_back(layout);
    devices->config = config;
    devices->inventory = inventory;
    if (driver.name == s.slice_options.drivers.nvidia) devices->driver_files = s.driver_files_for(config, inventory);
    driver.store->set_devices(std::move(devices));
  }
  if (s.publisher) s.publisher->publish(std::move(pools));
}

void DraWiring::use_nvml(const std::shared_ptr<NvmlLibrary>& nvml, const Config& config) {
  Impl& s = *impl_;
  s.nvml = nvml;
  if (!nvml || s.mig_bound.exchange(true)) return;
  auto control = dra::NvmlMigControl::bind_initialized(nvml, config.proc_root);
  if (!control) {
    spdlog::warn("DRA: dynamic MIG devices cannot be prepared: {}", control.error().message);
    return;
  }
  for (auto& driver : s.drivers)
    if (driver.name == s.slice_options.drivers.nvidia)
      for (const auto& note : driver.store->set_mig_control(*control)) spdlog::warn("DRA {}: {}", driver.name, note);
}

void DraWiring::on_pod_holds(std::function<void(bool)> listener) { impl_->on_pod_holds = std::move(listener); }

void DraWiring::append_share_metrics(std::string& out) const {
  const Impl& s = *impl_;
  std::set<std::string> shareable;
  std::shared_ptr<const Inventory> inventory;
  {
    std::lock_guard lock(impl_->mu);
    shareable = s.shared_gpus;
    inventory = s.last_inventory;
  }
  if (!inventory) return;
  std::vector<dra::PreparedClaim> prepared;
  for (const auto& driver : s.drivers)
    for (auto& c : driver.store->prepared()) prepared.push_back(std::move(c));
  dra::append_share_metrics(dra::shared_gpu_use(*inventory, shareable, prepared), out);
}

void DraWiring::stop() {
  if (!impl_) return;
  // First end everything that may wait (a claim read, an nvidia-smi run, an MPS daemon's
  // readiness, a slice request in flight, the slice watch's read), all at once and without
  // waiting: requests in flight are abandoned, not awaited, and the threads end side by side. Only
  // then remove the sockets (the kubelet deregisters the driver) and join what is still running.
  // With nothing in flight no thread but the slice watch exists, so the exit costs one join.
  impl_->interrupter.stop();
  if (impl_->cancel.get() >= 0) (void)::eventfd_write(impl_->cancel.get(), 1);
  if (impl_->share_watch) impl_->share_watch->stop();
  if (impl_->publisher) impl_->publisher->request_stop();
  for (auto& driver : impl_->drivers)
    if (driver.plugin) driver.plugin->stop();
  for (auto& driver : impl_->drivers) driver.health->stop();
  if (impl_->publisher) impl_->publisher->stop();
}

}  // namespace kgpu::cli
