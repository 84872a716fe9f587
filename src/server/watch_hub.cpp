#include "server/watch_hub.h"

#include <algorithm>

namespace kgpu::server {

namespace {
std::shared_ptr<const std::string> serialize(const DeviceList& list) {
  return std::make_shared<const std::string>(list ? list->SerializeAsString() : std::string());
}
}  // namespace

WatchHub::WatchHub(DeviceList initial) : latest_(std::move(initial)), latest_bytes_(serialize(latest_)) {}

void WatchHub::open(std::shared_ptr<rpc::ServerStream> stream) {
  std::weak_ptr<WatchHub> weak = weak_from_this();
  const rpc::ServerStream* key = stream.get();
  {
    std::lock_guard lock(mu_);
    if (closed_) {
      stream->finish();
      return;
    }
    streams_.push_back(stream);
    // Sent under the lock so that a concurrent publish() cannot slip an older list in after it.
    stream->send_latest(latest_bytes_);
  }
  // Outside the lock: runs at once (on this thread) if the stream has already ended.
  stream->on_end([weak, key] {
    if (auto hub = weak.lock()) hub->remove(key);
  });
}

void WatchHub::publish(DeviceList list) {
  auto bytes = serialize(list);
  std::lock_guard lock(mu_);
  latest_ = std::move(list);
  latest_bytes_ = bytes;
  for (auto& s : streams_) s->send_latest(bytes);  // posts to the server's thread; never blocks
}

void WatchHub::close_all() {
  std::lock_guard lock(mu_);
  closed_ = true;
  for (auto& s : streams_) s->finish();
}

void WatchHub::remove(const rpc::ServerStream* stream) {
  std::shared_ptr<rpc::ServerStream> keep;  // released after unlocking
  std::lock_guard lock(mu_);
  auto it = std::find_if(streams_.begin(), streams_.end(), [&](const auto& s) { return s.get() == stream; });
  if (it != streams_.end()) {
    keep = std::move(*it);
    streams_.erase(it);
  }
}

size_t WatchHub::open_streams() const {
  std::lock_guard lock(mu_);
  return streams_.size();
}

DeviceList WatchHub::latest() const {
  std::lock_guard lock(mu_);
  return latest_;
}

}  // namespace kgpu::server
