#pragma once
// The kubelet's DRA health manager, for tests and `kgpu kubelet-sim --dra`: one NodeWatchResources
// stream (v1alpha1.DRAResourceHealth, KEP-4680) on a plugin's DRA socket, as kubelets 1.34+ with
// the ResourceHealthStatus gate open it, read on a thread of its own with gRPC C++. Every report is
// kept with the time it arrived, so a test can measure how long an event took to reach it.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace grpc {
class ClientContext;
}

namespace kgpu::sim {

struct DraDeviceHealth {
  std::string pool;
  std::string device;
  std::string health;  // "Unknown", "Healthy", "Unhealthy"
  int64_t last_updated_time = 0;
  int64_t health_check_timeout_seconds = 0;
  std::string message;
};

struct DraHealthReport {
  std::chrono::steady_clock::time_point received;
  std::vector<DraDeviceHealth> devices;
  // The device named `device`, or null.
  const DraDeviceHealth* find(const std::string& device) const;
};

class DraHealthWatch {
 public:
  // Opens the stream on `endpoint` (the plugin's DRA socket). `on_report` (optional) runs on the
  // watch's thread for each report.
  explicit DraHealthWatch(std::string endpoint, std::function<void(const DraHealthReport&)> on_report = {});
  ~DraHealthWatch();  // cancels the stream and joins
  DraHealthWatch(const DraHealthWatch&) = delete;
  DraHealthWatch& operator=(const DraHealthWatch&) = delete;

  // Waits until a report satisfies `match` (the reports so far count too) and returns it; null
  // when `timeout` passed or the stream ended first.
  std::unique_ptr<DraHealthReport> wait_for(const std::function<bool(const DraHealthReport&)>& match,
                                            std::chrono::milliseconds timeout);
  std::vector<DraHealthReport> reports() const;
  bool ended() const;
  std::string end_status() const;  // the stream's final status, once ended

 private:
  void run();
  const std::string endpoint_;
  const std::function<void(const DraHealthReport&)> on_report_;
  mutable std::mutex mu_;
  std::condition_variable changed_;
  std::vector<DraHealthReport> reports_;
  bool ended_ = false;
  std::string end_status_;
  std::unique_ptr<grpc::ClientContext> ctx_;
  std::thread thread_;
};

}  // namespace kgpu::sim
