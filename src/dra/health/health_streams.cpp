#include "dra/health/health_streams.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "core/thread_name.h"
#include "dra-health/v1alpha1/api.pb.h"
#include "rpc/server.h"

namespace kgpu::dra::health {

namespace {

int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::string key_of(const DeviceHealthReport& r) { return r.pool + "/" + r.device; }

}  // namespace

HealthStreams::HealthStreams(std::string driver, std::chrono::milliseconds heartbeat, Clock clock)
    : driver_(std::move(driver)), heartbeat_(heartbeat), clock_(clock ? std::move(clock) : Clock(unix_now)) {}

HealthStreams::~HealthStreams() { stop(); }

void HealthStreams::watch(std::shared_ptr<rpc::ServerStream> stream) {
  std::lock_guard lock(mu_);
  if (stopping_) {
    stream->finish({rpc::Code::Unavailable, "the DRA driver is stopping"});
    return;
  }
  if (message_) stream->send_latest(message_);
  streams_.push_back(std::move(stream));
  spdlog::info("DRA {}: the kubelet watches device health ({} stream(s))", driver_, streams_.size());
  if (!heartbeat_thread_.joinable()) heartbeat_thread_ = std::thread([this] { heartbeat_loop(); });
}

void HealthStreams::update(std::vector<DeviceHealthReport> reports) {
  std::lock_guard lock(mu_);
  if (has_report_ && reports == reports_) return;
  const int64_t now = clock_();
  std::map<std::string, const DeviceHealthReport*> before;
  for (const auto& r : reports_) before[key_of(r)] = &r;
  std::map<std::string, int64_t> since;
  for (const auto& r : reports) {
    auto it = before.find(key_of(r));
    const bool same = it != before.end() && it->second->health == r.health && it->second->message == r.message;
    auto old = since_.find(key_of(r));
    since[key_of(r)] = same && old != since_.end() ? old->second : now;
    if (!same && (it != before.end() || r.health != DeviceHealthStatus::Healthy))
      spdlog::info("DRA {}: device {} {}{}{}", driver_, key_of(r), to_string(r.health), r.message.empty() ? "" : ": ",
                   r.message);
  }
  reports_ = std::move(reports);
  since_ = std::move(since);
  has_report_ = true;
  ::v1alpha1::NodeWatchResourcesResponse resp;
  for (const auto& r : reports_) {
    auto* d = resp.add_devices();
    d->mutable_device()->set_pool_name(r.pool);
    d->mutable_device()->set_device_name(r.device);
    d->set_health(static_cast<::v1alpha1::HealthStatus>(r.health));
    d->set_last_updated_time(since_[key_of(r)]);
    d->set_message(r.message);
  }
  message_ = std::make_shared<const std::string>(resp.SerializeAsString());
  send_locked();
}

void HealthStreams::send_locked() {
  if (!message_) return;
  std::erase_if(streams_, [&](const std::shared_ptr<rpc::ServerStream>& s) { return !s->send_latest(message_); });
}

void HealthStreams::heartbeat_loop() {
  name_this_thread("kgpu-dra-health");
  std::unique_lock lock(mu_);
  while (!stopping_) {
    // A periodic resend, not synchronisation: the kubelet forgets a device's state after 30 s.
    wake_.wait_for(lock, heartbeat_, [&] { return stopping_; });
    if (stopping_) break;
    send_locked();
  }
}

void HealthStreams::stop() {
  std::thread t;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    t = std::move(heartbeat_thread_);
  }
  wake_.notify_all();
  if (t.joinable()) t.join();
}

size_t HealthStreams::streams() const {
  std::lock_guard lock(mu_);
  return streams_.size();
}

std::vector<DeviceHealthReport> HealthStreams::current() const {
  std::lock_guard lock(mu_);
  return reports_;
}

}  // namespace kgpu::dra::health
