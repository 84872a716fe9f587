#include "server/resource_server.h"

#include <chrono>

#include <grpcpp/grpcpp.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

// The generated CallbackService overrides the sync signatures with callback ones of the same names;
// GCC reports that as hiding inside the generated templates. It is gRPC's intended use.
#pragma GCC diagnostic ignored "-Woverloaded-virtual"

#include "alloc/preferred.h"
#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "plan/allocate.h"
#include "server/edits_proto.h"
#include "server/socket_staging.h"
#include "server/watch_hub.h"

namespace kgpu::server {

std::string socket_file_name(const std::string& resource) {
  std::string s = resource;
  for (char& c : s)
    if (c == '/') c = '-';
  return "kgpu-" + s + ".sock";
}

std::shared_ptr<const v1beta1::ListAndWatchResponse> device_list(const ResourcePlan& plan,
                                                                 const std::string& resource) {
  auto msg = std::make_shared<v1beta1::ListAndWatchResponse>();
  if (const auto* r = plan.find(resource)) {
    for (const auto& d : r->devices) {
      auto* pd = msg->add_devices();
      pd->set_id(d.id);
      pd->set_health(d.healthy ? "Healthy" : "Unhealthy");
      if (!d.numa_nodes.empty()) {
        auto* topo = pd->mutable_topology();
        for (int64_t n : d.numa_nodes) topo->add_nodes()->set_id(n);
      }
    }
  }
  return msg;
}

// The DevicePlugin service of one resource. Survives server restarts; holds the current snapshot.
class DevicePluginService final : public v1beta1::DevicePlugin::CallbackService {
 public:
  DevicePluginService(std::string resource, StatePtr state, std::shared_ptr<ServerCounters> counters,
                      std::shared_ptr<ServerEvents> events)
      : resource_(std::move(resource)),
        state_(std::move(state)),
        counters_(std::move(counters)),
        events_(std::move(events)) {}

  void set_state(StatePtr s) {
    std::lock_guard lock(mu_);
    state_ = std::move(s);
  }
  StatePtr state() const {
    std::lock_guard lock(mu_);
    return state_;
  }
  void set_hub(std::shared_ptr<WatchHub> hub) {
    std::lock_guard lock(mu_);
    hub_ = std::move(hub);
  }

  grpc::ServerUnaryReactor* GetDevicePluginOptions(grpc::CallbackServerContext* ctx, const v1beta1::Empty*,
                                                   v1beta1::DevicePluginOptions* out) override {
    out->set_pre_start_required(false);
    out->set_get_preferred_allocation_available(true);
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

  grpc::ServerWriteReactor<v1beta1::ListAndWatchResponse>* ListAndWatch(grpc::CallbackServerContext* ctx,
                                                                         const v1beta1::Empty*) override {
    std::shared_ptr<WatchHub> hub;
    {
      std::lock_guard lock(mu_);
      hub = hub_;
    }
    spdlog::debug("ListAndWatch opened for {}", resource_);
    return hub->open(ctx);
  }

  grpc::ServerUnaryReactor* Allocate(grpc::CallbackServerContext* ctx, const v1beta1::AllocateRequest* req,
                                     v1beta1::AllocateResponse* out) override {
    auto* reactor = ctx->DefaultReactor();
    auto start = std::chrono::steady_clock::now();
    auto status = allocate_all(*req, out);
    if (events_) {
      double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      if (!status.ok()) {
        events_->allocate_refused(resource_, seconds);
      } else {
        std::vector<size_t> devices;
        for (const auto& c : req->container_requests()) devices.push_back(static_cast<size_t>(c.devices_ids_size()));
        events_->allocated(resource_, seconds, devices);
      }
    }
    reactor->Finish(status);
    return reactor;
  }

  grpc::ServerUnaryReactor* GetPreferredAllocation(grpc::CallbackServerContext* ctx,
                                                   const v1beta1::PreferredAllocationRequest* req,
                                                   v1beta1::PreferredAllocationResponse* out) override {
    auto* reactor = ctx->DefaultReactor();
    auto start = std::chrono::steady_clock::now();
    auto status = prefer_all(*req, out);
    if (events_)
      events_->preferred(resource_, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    reactor->Finish(status);
    return reactor;
  }

  grpc::ServerUnaryReactor* PreStartContainer(grpc::CallbackServerContext* ctx, const v1beta1::PreStartContainerRequest*,
                                              v1beta1::PreStartContainerResponse*) override {
    auto* reactor = ctx->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }

 private:
  grpc::Status fail(const Error& e, const char* rpc) {
    counters_->allocation_errors++;
    spdlog::warn("{} for {} rejected: {}", rpc, resource_, e.message);
    return to_grpc_status(e);
  }

  grpc::Status allocate_all(const v1beta1::AllocateRequest& req, v1beta1::AllocateResponse* out) {
    auto state = this->state();
    const Resource* resource = state->plan.find(resource_);
    if (!resource) return fail(Error::unavailable("resource " + resource_ + " is no longer advertised"), "Allocate");
    if (req.container_requests_size() == 0)
      return fail(Error::invalid("Allocate for " + resource_ + " carries no container requests"), "Allocate");
    for (const auto& creq : req.container_requests()) {
      std::vector<std::string> ids(creq.devices_ids().begin(), creq.devices_ids().end());
      // passDeviceSpecs: control nodes only if they exist now (a few stats; h6, issue 21).
      auto edits = kgpu::allocate(state->config, state->inventory, *resource, ids, [](const std::string& path) {
        struct stat st {};
        return ::stat(path.c_str(), &st) == 0;
      });
      if (!edits) return fail(edits.error(), "Allocate");
      to_proto(*edits, out->add_container_responses());
    }
    counters_->allocations++;
    return grpc::Status::OK;
  }

  grpc::Status prefer_all(const v1beta1::PreferredAllocationRequest& req, v1beta1::PreferredAllocationResponse* out) {
    counters_->preferred_calls++;
    auto state = this->state();
    const Resource* resource = state->plan.find(resource_);
    if (!resource)
      return fail(Error::unavailable("resource " + resource_ + " is no longer advertised"), "GetPreferredAllocation");
    for (const auto& creq : req.container_requests()) {
      std::vector<std::string> available(creq.available_deviceids().begin(), creq.available_deviceids().end());
      std::vector<std::string> must(creq.must_include_deviceids().begin(), creq.must_include_deviceids().end());
      auto ids = preferred_allocation(state->config, state->scorer, *resource, available, must, creq.allocation_size());
      if (!ids) return fail(ids.error(), "GetPreferredAllocation");
      auto* cresp = out->add_container_responses();
      for (auto& id : *ids) cresp->add_deviceids(std::move(id));
    }
    return grpc::Status::OK;
  }

  std::string resource_;
  mutable std::mutex mu_;
  StatePtr state_;
  std::shared_ptr<WatchHub> hub_;
  std::shared_ptr<ServerCounters> counters_;
  std::shared_ptr<ServerEvents> events_;  // may be null
};

ResourceServer::ResourceServer(std::string resource, std::string plugin_dir, StatePtr state,
                               std::shared_ptr<ServerEvents> events)
    : resource_(std::move(resource)),
      plugin_dir_(std::move(plugin_dir)),
      counters_(std::make_shared<ServerCounters>()),
      service_(std::make_shared<DevicePluginService>(resource_, std::move(state), counters_, std::move(events))) {}

ResourceServer::~ResourceServer() { stop(); }

namespace {

// Stops at once, whatever the kubelet does: ends the hub's streams (OK, or cancelled when a write
// is in flight), cuts the connections (a peer that stopped reading its socket otherwise holds a
// write, and gRPC's Shutdown with it, forever), then shuts the server down without waiting for
// calls to finish on their own. The kubelet treats a stream that ends either way alike.
void shut_down(grpc::Server& server, WatchHub& hub, const std::string& bound_path) {
  hub.close_all();
  shut_down_connections(bound_path);
  server.Shutdown(std::chrono::system_clock::now());
  server.Wait();
}

}  // namespace

Status ResourceServer::start() {
  std::lock_guard lock(mu_);
  if (server_) return ok_status();
  std::string path = socket_path();
  if (auto st = check_socket_path(path); !st) return st;
  auto staging = SocketStaging::create(plugin_dir_);
  if (!staging) return Error{staging.error().code, resource_ + ": " + staging.error().message};
  // A fresh hub per serving period: close_all() of the previous one ended its streams for good.
  auto hub = std::make_shared<WatchHub>(device_list(service_->state()->plan, resource_));
  service_->set_hub(hub);
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort("unix:" + staging->bind_path(), grpc::InsecureServerCredentials(), &bound);
  builder.RegisterService(service_.get());
  auto server = builder.BuildAndStart();
  if (!server || bound == 0)
    return Error::unavailable(resource_ + ": gRPC cannot listen on " + staging->bind_path() + " (see gRPC's log)");
  if (auto st = staging->publish(path); !st) {
    shut_down(*server, *hub, staging->bind_path());
    return Error{st.error().code, resource_ + ": " + st.error().message};
  }
  hub_ = std::move(hub);
  server_ = std::move(server);
  bound_path_ = staging->bind_path();
  return ok_status();
}

void ResourceServer::stop() {
  std::unique_ptr<grpc::Server> server;
  std::shared_ptr<WatchHub> hub;
  std::string bound_path;
  {
    std::lock_guard lock(mu_);
    server = std::move(server_);
    hub = hub_;
    bound_path = bound_path_;
  }
  if (!server) return;
  shut_down(*server, *hub, bound_path);
  server.reset();
  std::string path = socket_path();
  ::unlink(path.c_str());
}

Status ResourceServer::restart() {
  stop();
  return start();
}

bool ResourceServer::serving() const {
  std::lock_guard lock(mu_);
  return server_ != nullptr;
}

void ResourceServer::update(StatePtr state, bool push) {
  auto list = push ? device_list(state->plan, resource_) : nullptr;
  service_->set_state(std::move(state));
  if (!push) return;
  std::shared_ptr<WatchHub> hub;
  {
    std::lock_guard lock(mu_);
    hub = hub_;
  }
  if (hub) {
    hub->publish(std::move(list));
    counters_->list_and_watch_updates++;
  }
}

size_t ResourceServer::open_streams() const {
  std::lock_guard lock(mu_);
  return hub_ ? hub_->open_streams() : 0;
}

}  // namespace kgpu::server
