#include "sim/pod_resources_sim.h"

#include <grpcpp/grpcpp.h>
#include <unistd.h>

#include <filesystem>

#include "podresources/v1/api.grpc.pb.h"

namespace kgpu::sim {

struct PodResourcesSim::Service final : v1::PodResourcesLister::Service {
  explicit Service(const PodResourcesSim& sim) : owner(sim) {}

  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* resp) override {
    for (const auto& pod : owner.pods()) {
      auto* p = resp->add_pod_resources();
      p->set_name(pod.name);
      p->set_namespace_(pod.pod_namespace);
      auto* c = p->add_containers();
      c->set_name("main");
      for (const auto& [resource, ids] : pod.devices) {
        auto* d = c->add_devices();
        d->set_resource_name(resource);
        for (const auto& id : ids) d->add_device_ids(id);
      }
    }
    return grpc::Status::OK;
  }

  grpc::Status GetAllocatableResources(grpc::ServerContext*, const v1::AllocatableResourcesRequest*,
                                       v1::AllocatableResourcesResponse*) override {
    return {grpc::StatusCode::UNIMPLEMENTED, "the kubelet simulator does not track allocatable resources"};
  }

  const PodResourcesSim& owner;
  std::unique_ptr<grpc::Server> server;
};

PodResourcesSim::PodResourcesSim(std::string socket_path) : socket_path_(std::move(socket_path)) {}
PodResourcesSim::~PodResourcesSim() { stop(); }

Status PodResourcesSim::start() {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(socket_path_).parent_path(), ec);
  if (ec) return Error::unavailable("cannot create the folder of " + socket_path_ + ": " + ec.message());
  ::unlink(socket_path_.c_str());
  auto service = std::make_unique<Service>(*this);
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path_, grpc::InsecureServerCredentials());
  builder.RegisterService(service.get());
  service->server = builder.BuildAndStart();
  if (!service->server) return Error::unavailable("cannot serve PodResources on " + socket_path_);
  service_ = std::move(service);
  return ok_status();
}

void PodResourcesSim::stop() {
  if (!service_) return;
  service_->server->Shutdown(std::chrono::system_clock::now() + std::chrono::milliseconds(200));
  service_->server->Wait();
  service_.reset();
  ::unlink(socket_path_.c_str());
}

void PodResourcesSim::add(const std::string& pod_namespace, const std::string& name, const std::string& resource,
                          const std::vector<std::string>& ids) {
  std::lock_guard lock(mu_);
  auto& pod = pods_[{pod_namespace, name}];
  pod.pod_namespace = pod_namespace;
  pod.name = name;
  auto& held = pod.devices[resource];
  held.insert(held.end(), ids.begin(), ids.end());
}

void PodResourcesSim::remove(const std::string& pod_namespace, const std::string& name) {
  std::lock_guard lock(mu_);
  pods_.erase({pod_namespace, name});
}

std::vector<SimPod> PodResourcesSim::pods() const {
  std::lock_guard lock(mu_);
  std::vector<SimPod> out;
  for (const auto& [key, pod] : pods_) out.push_back(pod);
  return out;
}

}  // namespace kgpu::sim
