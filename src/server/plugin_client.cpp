#include "server/plugin_client.h"

#include <grpcpp/grpcpp.h>

#include "deviceplugin/v1beta1/api.grpc.pb.h"

namespace kgpu::server {

Result<v1beta1::ListAndWatchResponse> read_device_list(const std::string& socket, std::chrono::milliseconds timeout) {
  auto channel = grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials());
  auto stub = v1beta1::DevicePlugin::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + timeout);
  auto reader = stub->ListAndWatch(&ctx, v1beta1::Empty{});
  v1beta1::ListAndWatchResponse list;
  if (!reader->Read(&list))
    return Error::unavailable("ListAndWatch on " + socket + " sent nothing: " + reader->Finish().error_message());
  ctx.TryCancel();  // one snapshot is all we want
  (void)reader->Finish();
  return list;
}

}  // namespace kgpu::server
