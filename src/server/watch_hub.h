#pragma once
// ListAndWatch fan-out for one resource: every open stream gets the full device list at once and
// then the newest list after every publish(). The list is serialized once per publish, whatever
// the number of streams. A slow or absent reader never blocks publish(): each stream keeps only
// the newest list queued (every message is the full list, so older ones are obsolete).
#include <cstddef>
#include <memory>
#include <mutex>
#include <vector>

#include "deviceplugin/v1beta1/api.pb.h"
#include "rpc/server.h"

namespace kgpu::server {

using DeviceList = std::shared_ptr<const v1beta1::ListAndWatchResponse>;

class WatchHub : public std::enable_shared_from_this<WatchHub> {
 public:
  explicit WatchHub(DeviceList initial);

  // A new ListAndWatch call: sends it the current list; it leaves the hub when it ends.
  void open(std::shared_ptr<rpc::ServerStream> stream);
  // Sends `list` to every open stream (and to streams opened later). Never blocks on the network.
  void publish(DeviceList list);
  // Ends every open stream with OK (server stopping). Never waits. New opens are ended at once.
  void close_all();
  size_t open_streams() const;
  DeviceList latest() const;

 private:
  void remove(const rpc::ServerStream* stream);

  mutable std::mutex mu_;
  DeviceList latest_;
  std::shared_ptr<const std::string> latest_bytes_;
  bool closed_ = false;
  std::vector<std::shared_ptr<rpc::ServerStream>> streams_;
};

}  // namespace kgpu::server
