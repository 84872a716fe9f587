#include "sim/kubelet_sim.h"

#include <grpcpp/grpcpp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <filesystem>
#include <list>
#include <mutex>
#include <thread>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "server/edits_proto.h"
#include "sim/pod_resources_sim.h"

namespace kgpu::sim {
namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

size_t ResourceState::healthy_count() const {
  return static_cast<size_t>(std::count_if(devices.begin(), devices.end(),
                                           [](const SimDevice& d) { return d.health == "Healthy"; }));
}
std::vector<std::string> ResourceState::device_ids() const {
  std::vector<std::string> ids;
  for (const auto& d : devices) ids.push_back(d.id);
  return ids;
}
std::vector<std::string> ResourceState::healthy_ids() const {
  std::vector<std::string> ids;
  for (const auto& d : devices)
    if (d.health == "Healthy") ids.push_back(d.id);
  return ids;
}

const ResourceState* Snapshot::find(const std::string& resource) const {
  auto it = resources.find(resource);
  return it == resources.end() ? nullptr : &it->second;
}
bool Snapshot::ready(const std::string& resource, int min_updates) const {
  const auto* r = find(resource);
  return r && r->connected && r->updates >= min_updates;
}

const char* to_string(SimEvent::Kind kind) {
  switch (kind) {
    case SimEvent::Kind::Registered: return "registered";
    case SimEvent::Kind::Update: return "update";
    case SimEvent::Kind::StreamEnded: return "stream-ended";
    case SimEvent::Kind::Restarted: return "restarted";
    case SimEvent::Kind::Error: return "error";
  }
  return "unknown";
}

namespace {
// One registration of one plugin endpoint: its channel and the ListAndWatch reader thread.
struct Stream {
  std::string resource;
  uint64_t generation = 0;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1beta1::DevicePlugin::Stub> stub;
  grpc::ClientContext context;
  std::thread thread;
  std::atomic<bool> done{false};
};
}  // namespace

struct KubeletSim::Impl final : v1beta1::Registration::Service {
  std::string dir;
  std::string authority;  // empty: the plugin's socket path
  std::function<void(const SimEvent&)> callback;

  mutable std::mutex mu;
  mutable std::condition_variable cv;
  Snapshot state;
  uint64_t next_generation = 1;
  std::map<std::string, std::shared_ptr<Stream>> current;  // resource -> live stream
  std::list<std::shared_ptr<Stream>> streams;              // all not yet joined
  std::unique_ptr<grpc::Server> server;
  std::unique_ptr<PodResourcesSim> pod_resources;
  bool stopping = false;

  // gRPC C++ would send "localhost" for a unix: target; the default authority argument makes it
  // send what the kubelet's grpc-go sends instead.
  std::shared_ptr<grpc::Channel> dial_plugin(const std::string& socket) const {
    grpc::ChannelArguments args;
    args.SetString(GRPC_ARG_DEFAULT_AUTHORITY, authority.empty() ? socket : authority);
    return grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args);
  }

  void emit(SimEvent::Kind kind, const std::string& resource, std::string message) {
    if (callback) callback(SimEvent{kind, resource, std::move(message)});
  }

  grpc::Status Register(grpc::ServerContext*, const v1beta1::RegisterRequest* req, v1beta1::Empty*) override {
    if (req->version() != "v1beta1") {
      std::string msg = "unsupported device plugin API version \"" + req->version() + "\"";
      emit(SimEvent::Kind::Error, req->resource_name(), msg);
      return {grpc::StatusCode::INVALID_ARGUMENT, msg};
    }
    if (req->resource_name().empty() || req->endpoint().empty()) {
      emit(SimEvent::Kind::Error, req->resource_name(), "Register without resource name or endpoint");
      return {grpc::StatusCode::INVALID_ARGUMENT, "resource_name and endpoint are required"};
    }
    auto stream = std::make_shared<Stream>();
    stream->resource = req->resource_name();
    std::shared_ptr<Stream> previous;
    {
      std::lock_guard lock(mu);
      if (stopping) return {grpc::StatusCode::UNAVAILABLE, "kubelet simulator stopping"};
      reap_locked();
      stream->generation = next_generation++;
      auto& rs = state.resources[req->resource_name()];
      rs.resource = req->resource_name();
      rs.endpoint = req->endpoint();
      rs.pre_start_required = req->options().pre_start_required();
      rs.preferred_allocation_available = req->options().get_preferred_allocation_available();
      rs.registrations++;
      rs.connected = false;
      rs.last_registered = Clock::now();
      state.registrations++;
      auto it = current.find(rs.resource);
      if (it != current.end()) previous = it->second;
      current[rs.resource] = stream;
      streams.push_back(stream);
      stream->channel = dial_plugin(dir + "/" + req->endpoint());
      stream->stub = v1beta1::DevicePlugin::NewStub(stream->channel);
      // Like the kubelet: answer Register at once, connect to the plugin in the background.
      stream->thread = std::thread([this, stream] { run_stream(stream); });
    }
    if (previous) previous->context.TryCancel();  // a new registration replaces the old endpoint
    cv.notify_all();
    emit(SimEvent::Kind::Registered, req->resource_name(), "endpoint " + req->endpoint());
    return grpc::Status::OK;
  }

  void run_stream(const std::shared_ptr<Stream>& s) {
    {
      grpc::ClientContext ctx;
      ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
      v1beta1::Empty empty;
      v1beta1::DevicePluginOptions options;
      auto st = s->stub->GetDevicePluginOptions(&ctx, empty, &options);
      if (!st.ok()) emit(SimEvent::Kind::Error, s->resource, "GetDevicePluginOptions: " + st.error_message());
    }
    v1beta1::Empty empty;
    auto reader = s->stub->ListAndWatch(&s->context, empty);
    v1beta1::ListAndWatchResponse response;
    bool first = true;
    while (reader->Read(&response)) {
      std::vector<SimDevice> devices;
      size_t healthy = 0;
      for (const auto& d : response.devices()) {
        SimDevice sd{d.id(), d.health(), {}};
        for (const auto& n : d.topology().nodes()) sd.numa_nodes.push_back(n.id());
        healthy += sd.health == "Healthy";
        devices.push_back(std::move(sd));
      }
      size_t total = devices.size();
      bool is_current = false;
      {
        std::lock_guard lock(mu);
        auto it = current.find(s->resource);
        is_current = it != current.end() && it->second == s;
        if (is_current) {
          auto& rs = state.resources[s->resource];
          rs.devices = std::move(devices);
          rs.updates++;
          rs.connected = true;
          rs.last_update = Clock::now();
        }
      }
      if (!is_current) continue;
      cv.notify_all();
      emit(SimEvent::Kind::Update, s->resource,
           std::string(first ? "first list: " : "update: ") + std::to_string(total) + " devices, " +
               std::to_string(healthy) + " healthy");
      first = false;
    }
    auto status = reader->Finish();
    bool was_current = false;
    {
      std::lock_guard lock(mu);
      auto it = current.find(s->resource);
      was_current = it != current.end() && it->second == s;
      if (was_current) {
        state.resources[s->resource].connected = false;
        current.erase(it);
      }
      s->done = true;
    }
    cv.notify_all();
    if (was_current)
      emit(SimEvent::Kind::StreamEnded, s->resource,
           "ListAndWatch ended: " + (status.ok() ? std::string("OK") : status.error_message()));
  }

  // Joins reader threads that have finished, so a long run with many restarts keeps few threads.
  void reap_locked() {
    for (auto it = streams.begin(); it != streams.end();) {
      if ((*it)->done && (*it)->thread.joinable()) {
        (*it)->thread.join();
        it = streams.erase(it);
      } else {
        ++it;
      }
    }
  }

  Status start_server() {
    std::string path = dir + "/kubelet.sock";
    ::unlink(path.c_str());
    grpc::ServerBuilder builder;
    builder.AddListeningPort("unix:" + path, grpc::InsecureServerCredentials());
    builder.RegisterService(this);
    auto s = builder.BuildAndStart();
    if (!s) return Error::unavailable("cannot serve " + path);
    std::lock_guard lock(mu);
    server = std::move(s);
    return ok_status();
  }

  // Cancels every stream and waits for their threads.
  void stop_streams() {
    std::list<std::shared_ptr<Stream>> all;
    {
      std::lock_guard lock(mu);
      all = streams;
      streams.clear();
      current.clear();
      for (auto& [name, rs] : state.resources) rs.connected = false;
    }
    for (auto& s : all) s->context.TryCancel();
    for (auto& s : all)
      if (s->thread.joinable()) s->thread.join();
    cv.notify_all();
  }

  void stop_server() {
    std::unique_ptr<grpc::Server> s;
    {
      std::lock_guard lock(mu);
      s = std::move(server);
    }
    if (s) {
      s->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
      s->Wait();
    }
  }

  std::shared_ptr<Stream> stream_for(const std::string& resource) {
    std::lock_guard lock(mu);
    auto it = current.find(resource);
    if (it == current.end() || !it->second->stub) return nullptr;
    return it->second;
  }
};

void KubeletSim::set_authority(std::string authority) { impl_->authority = std::move(authority); }

KubeletSim::KubeletSim(std::string dir) : impl_(std::make_unique<Impl>()) {
  impl_->dir = std::move(dir);
  impl_->pod_resources = std::make_unique<PodResourcesSim>(pod_resources_socket());
}
KubeletSim::~KubeletSim() { stop(); }

const std::string& KubeletSim::dir() const { return impl_->dir; }
std::string KubeletSim::socket_path() const { return impl_->dir + "/kubelet.sock"; }
void KubeletSim::on_event(std::function<void(const SimEvent&)> callback) { impl_->callback = std::move(callback); }

Status KubeletSim::start() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = false;
  }
  // Without PodResources the simulator still works as a device manager: report, do not fail.
  if (auto st = impl_->pod_resources->start(); !st) impl_->emit(SimEvent::Kind::Error, "", st.error().message);
  return impl_->start_server();
}

void KubeletSim::stop() {
  {
    std::lock_guard lock(impl_->mu);
    impl_->stopping = true;
  }
  impl_->stop_server();
  impl_->stop_streams();
  impl_->pod_resources->stop();
  std::error_code ec;
  fs::remove(socket_path(), ec);
}

std::string KubeletSim::pod_resources_socket() const {
  fs::path dir(impl_->dir);
  if (!dir.has_filename()) dir = dir.parent_path();  // "/x/device-plugins/"
  return (dir.parent_path() / "pod-resources" / "kubelet.sock").string();
}

Result<ContainerEdits> KubeletSim::run_pod(const std::string& pod_namespace, const std::string& name,
                                           const std::string& resource, const std::vector<std::string>& ids) {
  auto edits = allocate(resource, ids);
  if (edits) impl_->pod_resources->add(pod_namespace, name, resource, ids);
  return edits;
}

void KubeletSim::delete_pod(const std::string& pod_namespace, const std::string& name) {
  impl_->pod_resources->remove(pod_namespace, name);
}

Snapshot KubeletSim::snapshot() const {
  std::lock_guard lock(impl_->mu);
  return impl_->state;
}

bool KubeletSim::wait_for(const std::function<bool(const Snapshot&)>& pred, std::chrono::milliseconds timeout) const {
  std::unique_lock lock(impl_->mu);
  return impl_->cv.wait_for(lock, timeout, [&] { return pred(impl_->state); });
}

Result<std::vector<ContainerEdits>> KubeletSim::allocate_containers(
    const std::string& resource, const std::vector<std::vector<std::string>>& containers) {
  auto s = impl_->stream_for(resource);
  if (!s) return Error::unavailable("no plugin registered for " + resource);
  v1beta1::AllocateRequest req;
  for (const auto& ids : containers) {
    auto* c = req.add_container_requests();
    for (const auto& id : ids) c->add_devices_ids(id);
  }
  v1beta1::AllocateResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto st = s->stub->Allocate(&ctx, req, &resp);
  if (!st.ok()) return server::from_grpc_status(st);
  std::vector<ContainerEdits> out;
  for (const auto& c : resp.container_responses()) out.push_back(server::from_proto(c));
  return out;
}

Result<ContainerEdits> KubeletSim::allocate(const std::string& resource, const std::vector<std::string>& ids) {
  auto r = allocate_containers(resource, {ids});
  if (!r) return r.error();
  if (r->size() != 1)
    return Error::internal("Allocate answered " + std::to_string(r->size()) + " container responses for 1 request");
  return std::move(r->front());
}

Result<std::vector<std::string>> KubeletSim::preferred(const std::string& resource,
                                                       const std::vector<std::string>& available,
                                                       const std::vector<std::string>& must_include, int size) {
  auto s = impl_->stream_for(resource);
  if (!s) return Error::unavailable("no plugin registered for " + resource);
  v1beta1::PreferredAllocationRequest req;
  auto* c = req.add_container_requests();
  for (const auto& id : available) c->add_available_deviceids(id);
  for (const auto& id : must_include) c->add_must_include_deviceids(id);
  c->set_allocation_size(size);
  v1beta1::PreferredAllocationResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto st = s->stub->GetPreferredAllocation(&ctx, req, &resp);
  if (!st.ok()) return server::from_grpc_status(st);
  if (resp.container_responses_size() != 1)
    return Error::internal("GetPreferredAllocation answered " + std::to_string(resp.container_responses_size()) +
                           " container responses for 1 request");
  const auto& ids = resp.container_responses(0).deviceids();
  return std::vector<std::string>(ids.begin(), ids.end());
}

Status KubeletSim::pre_start(const std::string& resource, const std::vector<std::string>& ids) {
  auto s = impl_->stream_for(resource);
  if (!s) return Error::unavailable("no plugin registered for " + resource);
  v1beta1::PreStartContainerRequest req;
  for (const auto& id : ids) req.add_devices_ids(id);
  v1beta1::PreStartContainerResponse resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  auto st = s->stub->PreStartContainer(&ctx, req, &resp);
  if (!st.ok()) return server::from_grpc_status(st);
  return ok_status();
}

Status KubeletSim::restart() {
  impl_->stop_server();
  impl_->stop_streams();
  // A starting kubelet deletes every socket in the device-plugin directory.
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(impl_->dir, ec)) {
    struct stat st {};
    if (::lstat(entry.path().c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) fs::remove(entry.path(), ec);
  }
  {
    std::lock_guard lock(impl_->mu);
    impl_->state.restarts++;
    impl_->state.last_restart = Clock::now();
  }
  auto st = impl_->start_server();
  impl_->cv.notify_all();
  impl_->emit(SimEvent::Kind::Restarted, "", st ? "kubelet.sock recreated" : st.error().message);
  return st;
}

}  // namespace kgpu::sim
