#include "server/registrar.h"

#include <grpcpp/grpcpp.h>

#include "deviceplugin/v1beta1/api.grpc.pb.h"
#include "server/edits_proto.h"

namespace kgpu::server {

Status register_with_kubelet(const RegisterRequestInfo& info, std::chrono::milliseconds timeout) {
  // A fresh channel per attempt: after a kubelet restart kubelet.sock is a new inode.
  auto channel = grpc::CreateChannel("unix:" + info.kubelet_socket, grpc::InsecureChannelCredentials());
  auto stub = v1beta1::Registration::NewStub(channel);
  v1beta1::RegisterRequest req;
  req.set_version("v1beta1");
  req.set_endpoint(info.endpoint);
  req.set_resource_name(info.resource);
  req.mutable_options()->set_get_preferred_allocation_available(info.preferred_allocation_available);
  req.mutable_options()->set_pre_start_required(info.pre_start_required);
  v1beta1::Empty resp;
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  auto st = stub->Register(&ctx, req, &resp);
  if (!st.ok()) {
    Error e = from_grpc_status(st);
    e.message = "registering " + info.resource + " with the kubelet at " + info.kubelet_socket + ": " + e.message;
    return e;
  }
  return ok_status();
}

}  // namespace kgpu::server
