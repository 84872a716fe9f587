#include "podresources/client.h"

#include <grpcpp/grpcpp.h>

#include <filesystem>

#include "podresources/v1/api.grpc.pb.h"

namespace kgpu::podresources {

std::string socket_for(const std::string& kubelet_socket) {
  namespace fs = std::filesystem;
  const fs::path kubelet_root = fs::path(kubelet_socket).parent_path().parent_path();
  return (kubelet_root / "pod-resources" / "kubelet.sock").string();
}

Result<std::vector<ContainerDevices>> list(const std::string& socket, std::chrono::milliseconds timeout) {
  auto channel = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  auto stub = v1::PodResourcesLister::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  v1::ListPodResourcesResponse resp;
  const grpc::Status st = stub->List(&ctx, v1::ListPodResourcesRequest{}, &resp);
  if (!st.ok()) {
    std::string what = "PodResources List on " + socket + ": " + st.error_message();
    switch (st.error_code()) {
      case grpc::StatusCode::UNAVAILABLE:
      case grpc::StatusCode::DEADLINE_EXCEEDED:
      case grpc::StatusCode::RESOURCE_EXHAUSTED: return Error::unavailable(what);
      default: return Error::internal(what);
    }
  }
  std::vector<ContainerDevices> out;
  for (const auto& pod : resp.pod_resources())
    for (const auto& c : pod.containers())
      for (const auto& d : c.devices()) {
        ContainerDevices cd{pod.namespace_(), pod.name(), c.name(), d.resource_name(), {}};
        cd.device_ids.assign(d.device_ids().begin(), d.device_ids().end());
        out.push_back(std::move(cd));
      }
  return out;
}

}  // namespace kgpu::podresources
