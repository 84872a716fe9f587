#pragma once
// ListAndWatch fan-out for one resource. Each open stream is a WatchReactor (gRPC callback API):
// it writes the full device list at once and then the newest list after every publish(). A slow
// or absent reader never blocks publish(): a reactor has at most one write in flight and keeps
// only the newest pending list (each message is the full list, so older ones are obsolete).
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include <grpcpp/server_context.h>
#include <grpcpp/support/server_callback.h>

#include "deviceplugin/v1beta1/api.pb.h"

namespace kgpu::server {

using DeviceList = std::shared_ptr<const v1beta1::ListAndWatchResponse>;
class WatchReactor;

class WatchHub : public std::enable_shared_from_this<WatchHub> {
 public:
  explicit WatchHub(DeviceList initial);

  // Creates the reactor for a new ListAndWatch call (`ctx`: its context, null in tests); it starts
  // writing the current list.
  grpc::ServerWriteReactor<v1beta1::ListAndWatchResponse>* open(grpc::CallbackServerContext* ctx);
  // Sends `list` to every open stream (and to streams opened later). Never blocks on the network.
  void publish(DeviceList list);
  // Ends every open stream (server stopping): with OK, or cancelled when a write to it is still in
  // flight (a reader that stopped reading). Never waits. New opens are finished at once.
  void close_all();
  size_t open_streams() const;
  DeviceList latest() const;

 private:
  friend class WatchReactor;
  void remove(const WatchReactor* reactor);

  mutable std::mutex mu_;
  std::mutex publish_mu_;  // keeps publishes in order without holding mu_ across gRPC calls
  DeviceList latest_;
  bool closed_ = false;
  std::vector<std::shared_ptr<WatchReactor>> reactors_;
};

}  // namespace kgpu::server
