#include "server/plugin_client.h"

#include "rpc/client.h"

namespace kgpu::server {

// kgpu's own client (src/rpc), not gRPC C++: the operator tools stay single-threaded, with no
// gRPC runtime threads to start for one snapshot (and none for ThreadSanitizer to see racing in
// an uninstrumented library: stop 44's CI).
Result<v1beta1::ListAndWatchResponse> read_device_list(const std::string& socket, std::chrono::milliseconds timeout) {
  auto answer = rpc::call_first_message(socket, "/v1beta1.DevicePlugin/ListAndWatch",
                                        v1beta1::Empty{}.SerializeAsString(), timeout);
  if (!answer.status.ok())
    return Error::unavailable("ListAndWatch on " + socket + " sent nothing: " + answer.status.message);
  v1beta1::ListAndWatchResponse list;
  if (!list.ParseFromString(answer.message))
    return Error::unavailable("ListAndWatch on " + socket + " sent a list that does not decode");
  return list;
}

}  // namespace kgpu::server
