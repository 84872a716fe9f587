#include "server/registrar.h"

#include "deviceplugin/v1beta1/api.pb.h"
#include "rpc/client.h"

namespace kgpu::server {

Status register_with_kubelet(const RegisterRequestInfo& info, std::chrono::milliseconds timeout,
                             const std::function<void(const rpc::Peer&)>& on_kubelet) {
  // A fresh connection per attempt: after a kubelet restart kubelet.sock is a new inode.
  v1beta1::RegisterRequest req;
  req.set_version("v1beta1");
  req.set_endpoint(info.endpoint);
  req.set_resource_name(info.resource);
  req.mutable_options()->set_get_preferred_allocation_available(info.preferred_allocation_available);
  req.mutable_options()->set_pre_start_required(info.pre_start_required);
  auto answer = rpc::call_unary(info.kubelet_socket, "/v1beta1.Registration/Register", req.SerializeAsString(), timeout,
                                rpc::kMaxMessageBytes, on_kubelet);
  if (!answer.status.ok()) {
    Error e = rpc::error_of(answer.status);
    e.message = "registering " + info.resource + " with the kubelet at " + info.kubelet_socket + ": " + e.message;
    return e;
  }
  return ok_status();
}

}  // namespace kgpu::server
