#include "podresources/client.h"

#include <filesystem>

#include "podresources/v1/api.pb.h"
#include "rpc/client.h"

namespace kgpu::podresources {

std::string socket_for(const std::string& kubelet_socket) {
  namespace fs = std::filesystem;
  const fs::path kubelet_root = fs::path(kubelet_socket).parent_path().parent_path();
  return (kubelet_root / "pod-resources" / "kubelet.sock").string();
}

Result<std::vector<ContainerDevices>> list(const std::string& socket, std::chrono::milliseconds timeout) {
  auto answer = rpc::call_unary(socket, "/v1.PodResourcesLister/List", v1::ListPodResourcesRequest{}.SerializeAsString(),
                                timeout);
  if (!answer.status.ok()) {
    std::string what = "PodResources List on " + socket + ": " + answer.status.message;
    return answer.status.code == rpc::Code::Unavailable || answer.status.code == rpc::Code::DeadlineExceeded ||
                   answer.status.code == rpc::Code::ResourceExhausted
               ? Error::unavailable(what)
               : Error::internal(what);
  }
  v1::ListPodResourcesResponse resp;
  if (!resp.ParseFromString(answer.message))
    return Error::internal("PodResources List on " + socket + ": the answer is not a ListPodResourcesResponse");
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
