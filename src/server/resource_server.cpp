#include "server/resource_server.h"

#include <chrono>

#include <spdlog/fmt/ranges.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "alloc/preferred.h"
#include "deviceplugin/v1beta1/api.pb.h"
#include "plan/allocate.h"
#include "rpc/server.h"
#include "rpc/status.h"
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

namespace {
using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}
// Parses a request; false leaves an InvalidArgument answer with `responder`.
template <typename Message>
bool parse(std::string_view bytes, Message& out, const rpc::Responder& responder) {
  if (out.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) return true;
  responder.fail({rpc::Code::InvalidArgument, "the request is not a valid " + out.GetTypeName()});
  return false;
}
}  // namespace

// The DevicePlugin service of one resource. Survives server restarts; holds the current snapshot.
// Its handlers run on the transport's thread and answer at once (microseconds).
class DevicePluginService {
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
  void set_stream_observer(std::function<void()> observer) {
    std::lock_guard lock(mu_);
    stream_observer_ = std::move(observer);
  }
  std::function<void()> stream_observer() const {
    std::lock_guard lock(mu_);
    return stream_observer_;
  }
  void set_hub(std::shared_ptr<WatchHub> hub) {
    std::lock_guard lock(mu_);
    hub_ = std::move(hub);
  }

  // The rpc methods, bound to this service (which outlives every serving period).
  std::shared_ptr<rpc::Service> methods(const std::shared_ptr<DevicePluginService>& self) {
    auto m = std::make_shared<rpc::Service>();
    const std::string base = "/v1beta1.DevicePlugin/";
    m->unary(base + "GetDevicePluginOptions", [](std::string_view, rpc::Responder r) {
      v1beta1::DevicePluginOptions out;
      out.set_pre_start_required(false);
      out.set_get_preferred_allocation_available(true);
      r.reply(out.SerializeAsString());
    });
    m->server_streaming(base + "ListAndWatch", [self](std::string_view, std::shared_ptr<rpc::ServerStream> stream) {
      spdlog::debug("ListAndWatch opened for {}", self->resource_);
      self->hub()->open(std::move(stream));
      self->counters_->list_and_watch_opened++;
      if (auto opened = self->stream_observer()) opened();
    });
    m->unary(base + "Allocate", [self](std::string_view bytes, rpc::Responder r) { self->allocate(bytes, r); });
    m->unary(base + "GetPreferredAllocation",
             [self](std::string_view bytes, rpc::Responder r) { self->prefer(bytes, r); });
    m->unary(base + "PreStartContainer", [](std::string_view, rpc::Responder r) {
      r.reply(v1beta1::PreStartContainerResponse{}.SerializeAsString());
    });
    return m;
  }

 private:
  std::shared_ptr<WatchHub> hub() const {
    std::lock_guard lock(mu_);
    return hub_;
  }

  void allocate(std::string_view bytes, const rpc::Responder& r) {
    auto start = Clock::now();
    v1beta1::AllocateRequest req;
    if (!parse(bytes, req, r)) return;
    v1beta1::AllocateResponse out;
    auto status = allocate_all(req, &out);
    if (events_) {
      if (!status.ok()) {
        events_->allocate_refused(resource_, seconds_since(start));
      } else {
        std::vector<size_t> devices;
        for (const auto& c : req.container_requests()) devices.push_back(static_cast<size_t>(c.devices_ids_size()));
        events_->allocated(resource_, seconds_since(start), devices);
      }
    }
    if (status.ok()) r.reply(out.SerializeAsString());
    else r.fail(status);
  }

  void prefer(std::string_view bytes, const rpc::Responder& r) {
    auto start = Clock::now();
    v1beta1::PreferredAllocationRequest req;
    if (!parse(bytes, req, r)) return;
    v1beta1::PreferredAllocationResponse out;
    auto status = prefer_all(req, &out);
    if (events_) events_->preferred(resource_, seconds_since(start));
    if (status.ok()) r.reply(out.SerializeAsString());
    else r.fail(status);
  }

  rpc::RpcStatus fail(const Error& e, const char* method) {
    counters_->allocation_errors++;
    spdlog::warn("{} for {} rejected: {}", method, resource_, e.message);
    return rpc::status_of(e);
  }

  rpc::RpcStatus allocate_all(const v1beta1::AllocateRequest& req, v1beta1::AllocateResponse* out) {
    auto state = this->state();
    const Resource* resource = state->plan.find(resource_);
    if (!resource) return fail(Error::unavailable("resource " + resource_ + " is no longer advertised"), "Allocate");
    if (req.container_requests_size() == 0)
      return fail(Error::invalid("Allocate for " + resource_ + " carries no container requests"), "Allocate");
    for (const auto& creq : req.container_requests()) {
      std::vector<std::string> ids(creq.devices_ids().begin(), creq.devices_ids().end());
      // Allocated once each (plan/allocate.h); said once per container request, not per ID.
      if (const auto repeated = repeated_ids(ids); !repeated.empty())
        spdlog::warn("Allocate for {}: device IDs requested more than once, each allocated once: {}", resource_,
                     fmt::join(repeated, ", "));
      // passDeviceSpecs: control nodes only if they exist now (a few stats; h6, issue 21).
      auto edits = kgpu::allocate(state->config, state->inventory, *resource, ids, [](const std::string& path) {
        struct stat st {};
        return ::stat(path.c_str(), &st) == 0;
      });
      if (!edits) return fail(edits.error(), "Allocate");
      to_proto(*edits, out->add_container_responses());
    }
    counters_->allocations++;
    return {};
  }

  rpc::RpcStatus prefer_all(const v1beta1::PreferredAllocationRequest& req, v1beta1::PreferredAllocationResponse* out) {
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
    return {};
  }

  std::string resource_;
  mutable std::mutex mu_;
  StatePtr state_;
  std::shared_ptr<WatchHub> hub_;
  std::function<void()> stream_observer_;
  std::shared_ptr<ServerCounters> counters_;
  std::shared_ptr<ServerEvents> events_;  // may be null
};

namespace {
// The transport every ResourceServer of the process shares unless given one: one thread for all.
std::shared_ptr<rpc::Server> process_transport() {
  static std::mutex mu;
  static std::weak_ptr<rpc::Server> shared;
  std::lock_guard lock(mu);
  if (auto s = shared.lock()) return s;
  auto started = rpc::Server::start();
  if (!started) return nullptr;
  std::shared_ptr<rpc::Server> s = std::move(*started);
  shared = s;
  return s;
}
}  // namespace

ResourceServer::ResourceServer(std::string resource, std::string plugin_dir, StatePtr state,
                               std::shared_ptr<ServerEvents> events, std::shared_ptr<rpc::Server> rpc)
    : resource_(std::move(resource)),
      plugin_dir_(std::move(plugin_dir)),
      counters_(std::make_shared<ServerCounters>()),
      service_(std::make_shared<DevicePluginService>(resource_, std::move(state), counters_, std::move(events))),
      rpc_(std::move(rpc)) {}

ResourceServer::~ResourceServer() { stop(); }

void ResourceServer::on_list_and_watch(std::function<void()> observer) {
  service_->set_stream_observer(std::move(observer));
}

Status ResourceServer::start() {
  std::lock_guard lock(mu_);
  if (listener_ != 0) return ok_status();
  if (!rpc_) rpc_ = process_transport();
  if (!rpc_) return Error::unavailable(resource_ + ": the gRPC transport cannot start");
  std::string path = socket_path();
  if (auto st = check_socket_path(path); !st) return st;
  auto staging = SocketStaging::create(plugin_dir_);
  if (!staging) return Error{staging.error().code, resource_ + ": " + staging.error().message};
  auto fd = rpc::listen_unix(staging->bind_path());
  if (!fd) return Error{fd.error().code, resource_ + ": " + fd.error().message};
  // A fresh hub per serving period: close_all() of the previous one ended its streams for good.
  auto hub = std::make_shared<WatchHub>(device_list(service_->state()->plan, resource_));
  service_->set_hub(hub);
  // Published before it serves: nobody can connect to the private folder, and the kubelet learns
  // of the socket only from Register, after start() returns.
  if (auto st = staging->publish(path); !st) return Error{st.error().code, resource_ + ": " + st.error().message};
  auto id = rpc_->serve(std::move(*fd), service_->methods(service_));
  if (!id) {
    ::unlink(path.c_str());
    return Error{id.error().code, resource_ + ": " + id.error().message};
  }
  hub_ = std::move(hub);
  listener_ = *id;
  return ok_status();
}

void ResourceServer::stop() {
  uint64_t listener = 0;
  std::shared_ptr<WatchHub> hub;
  {
    std::lock_guard lock(mu_);
    listener = std::exchange(listener_, 0);
    hub = hub_;
  }
  if (listener == 0) return;
  // Ends the streams with OK where the peer still reads (sent as the connections close, if the
  // socket takes it), then closes every connection at once: the kubelet treats a stream that ends
  // either way alike, and nothing here waits for a peer.
  hub->close_all();
  rpc_->close(listener);
  std::string path = socket_path();
  ::unlink(path.c_str());
}

Status ResourceServer::restart() {
  stop();
  return start();
}

size_t ResourceServer::kubelet_streams() const {
  uint64_t listener = 0;
  {
    std::lock_guard lock(mu_);
    listener = listener_;
  }
  return listener == 0 ? 0 : rpc_->kubelet_streams(listener);
}

bool ResourceServer::serving() const {
  std::lock_guard lock(mu_);
  return listener_ != 0;
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
