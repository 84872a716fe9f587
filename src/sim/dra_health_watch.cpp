#include "sim/dra_health_watch.h"

#include <grpcpp/grpcpp.h>

#include "dra-health/v1alpha1/api.grpc.pb.h"

namespace kgpu::sim {

namespace {

const char* health_name(::v1alpha1::HealthStatus h) {
  switch (h) {
    case ::v1alpha1::HEALTHY: return "Healthy";
    case ::v1alpha1::UNHEALTHY: return "Unhealthy";
    default: return "Unknown";
  }
}

}  // namespace

const DraDeviceHealth* DraHealthReport::find(const std::string& device) const {
  for (const auto& d : devices)
    if (d.device == device) return &d;
  return nullptr;
}

DraHealthWatch::DraHealthWatch(std::string endpoint, std::function<void(const DraHealthReport&)> on_report)
    : endpoint_(std::move(endpoint)), on_report_(std::move(on_report)), ctx_(std::make_unique<grpc::ClientContext>()) {
  thread_ = std::thread([this] { run(); });
}

DraHealthWatch::~DraHealthWatch() {
  ctx_->TryCancel();
  if (thread_.joinable()) thread_.join();
}

void DraHealthWatch::run() {
  auto channel = grpc::CreateChannel("unix:" + endpoint_, grpc::InsecureChannelCredentials());
  auto stub = ::v1alpha1::DRAResourceHealth::NewStub(channel);
  auto reader = stub->NodeWatchResources(ctx_.get(), ::v1alpha1::NodeWatchResourcesRequest{});
  ::v1alpha1::NodeWatchResourcesResponse resp;
  while (reader->Read(&resp)) {
    DraHealthReport report{std::chrono::steady_clock::now(), {}};
    for (const auto& d : resp.devices())
      report.devices.push_back({d.device().pool_name(), d.device().device_name(), health_name(d.health()),
                                d.last_updated_time(), d.health_check_timeout_seconds(), d.message()});
    if (on_report_) on_report_(report);
    {
      std::lock_guard lock(mu_);
      reports_.push_back(std::move(report));
    }
    changed_.notify_all();
  }
  auto st = reader->Finish();
  {
    std::lock_guard lock(mu_);
    ended_ = true;
    end_status_ = std::to_string(static_cast<int>(st.error_code())) + " " + st.error_message();
  }
  changed_.notify_all();
}

std::unique_ptr<DraHealthReport> DraHealthWatch::wait_for(const std::function<bool(const DraHealthReport&)>& match,
                                                          std::chrono::milliseconds timeout) {
  std::unique_lock lock(mu_);
  size_t seen = 0;
  std::unique_ptr<DraHealthReport> found;
  changed_.wait_for(lock, timeout, [&] {
    for (; seen < reports_.size(); ++seen)
      if (match(reports_[seen])) {
        found = std::make_unique<DraHealthReport>(reports_[seen]);
        return true;
      }
    return ended_;
  });
  return found;
}

std::vector<DraHealthReport> DraHealthWatch::reports() const {
  std::lock_guard lock(mu_);
  return reports_;
}

bool DraHealthWatch::ended() const {
  std::lock_guard lock(mu_);
  return ended_;
}

std::string DraHealthWatch::end_status() const {
  std::lock_guard lock(mu_);
  return end_status_;
}

}  // namespace kgpu::sim
