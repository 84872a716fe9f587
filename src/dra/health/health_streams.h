#pragma once
// The kubelet's NodeWatchResources streams of one DRA driver (v1alpha1.DRAResourceHealth, served on
// the DRA socket next to the node service; dra/kubelet_plugin.h). Each message is a complete report
// of the driver's devices, as the API asks:
//  - a stream opened later (a kubelet restart, a second kubelet) gets the current report first;
//  - every change of any device's health or message is sent at once to every open stream, from the
//    thread that applied the change (the daemon's plan), so the kubelet hears of an XID as soon as
//    the slices do;
//  - the same report is sent again every `heartbeat` while streams are open: the kubelet shows a
//    device Unknown once it has gone 30 s without a report (DefaultHealthTimeout, k/k
//    pkg/kubelet/cm/dra/healthinfo.go), whatever the device's last state was. The heartbeat thread
//    starts with the first stream (a daemon no kubelet watches has none) and ends with stop().
// Sending never blocks: a stream keeps only the newest report (rpc::ServerStream::send_latest).
// Thread-safe.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "dra/health/device_health.h"

namespace kgpu::rpc {
class ServerStream;
}

namespace kgpu::dra::health {

class HealthStreams {
 public:
  using Clock = std::function<int64_t()>;  // Unix seconds, for last_updated_time
  explicit HealthStreams(std::string driver, std::chrono::milliseconds heartbeat = std::chrono::seconds(10),
                         Clock clock = {});
  ~HealthStreams();  // stop()
  HealthStreams(const HealthStreams&) = delete;
  HealthStreams& operator=(const HealthStreams&) = delete;

  // A NodeWatchResources call: the current report goes out at once (once a report exists).
  void watch(std::shared_ptr<rpc::ServerStream> stream);
  // The driver's devices now (pool_health): sent to every stream when anything differs from the
  // last report; a device whose state changed gets the current time as last_updated_time.
  void update(std::vector<DeviceHealthReport> reports);
  // Ends the heartbeat (streams end with the DRA socket). Idempotent.
  void stop();

  size_t streams() const;
  std::vector<DeviceHealthReport> current() const;

 private:
  void send_locked();  // the current report to every open stream; drops the ended ones
  void heartbeat_loop();

  const std::string driver_;
  const std::chrono::milliseconds heartbeat_;
  const Clock clock_;
  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool has_report_ = false;
  std::vector<DeviceHealthReport> reports_;
  std::map<std::string, int64_t> since_;  // "<pool>/<device>" -> when its state last changed
  std::shared_ptr<const std::string> message_;  // the serialized report
  std::vector<std::shared_ptr<rpc::ServerStream>> streams_;
  std::thread heartbeat_thread_;
};

}  // namespace kgpu::dra::health
