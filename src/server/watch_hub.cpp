#include "server/watch_hub.h"

#include <algorithm>

namespace kgpu::server {

// Owned by the hub (shared_ptr) rather than deleting itself in OnDone, so publish() can hold a
// reference while it calls into gRPC without holding any lock: gRPC may run OnWriteDone/OnDone
// inline from StartWrite/Finish, so no lock of ours is ever held across those calls.
class WatchReactor final : public grpc::ServerWriteReactor<v1beta1::ListAndWatchResponse> {
 public:
  WatchReactor(std::weak_ptr<WatchHub> hub, grpc::CallbackServerContext* ctx) : hub_(std::move(hub)), ctx_(ctx) {}

  void push(DeviceList list) {
    const v1beta1::ListAndWatchResponse* to_write = nullptr;
    {
      std::lock_guard lock(mu_);
      if (finish_state_ != FinishState::None) return;
      pending_ = std::move(list);
      if (writing_) return;  // OnWriteDone picks up the newest pending list
      writing_ = true;
      inflight_ = std::move(pending_);
      to_write = inflight_.get();
    }
    StartWrite(to_write);
  }

  // Ends the stream with OK, after the write in flight (if any) completes. With `cut`, a write
  // still in flight is cancelled rather than waited for: a reader that stopped reading (its
  // socket or HTTP/2 window full) would otherwise hold that write, and the server's shutdown
  // with it, forever.
  void finish(bool cut = false) {
    bool now = false, cancel = false;
    {
      std::lock_guard lock(mu_);
      if (finish_state_ == FinishState::Sent) return;
      if (finish_state_ == FinishState::None) finish_state_ = FinishState::Requested;
      if (!writing_) {
        finish_state_ = FinishState::Sent;
        now = true;
      } else if (cut && ctx_ && !cancelled_) {
        cancelled_ = true;
        cancel = true;
      }
    }
    if (now) Finish(grpc::Status::OK);
    if (cancel) ctx_->TryCancel();  // the write completes (not ok) at once; OnWriteDone then finishes
  }

  void OnWriteDone(bool ok) override {
    const v1beta1::ListAndWatchResponse* next = nullptr;
    bool finish_now = false;
    {
      std::lock_guard lock(mu_);
      inflight_.reset();
      if (!ok && finish_state_ == FinishState::None) finish_state_ = FinishState::Requested;
      if (finish_state_ == FinishState::Requested) {
        writing_ = false;
        finish_state_ = FinishState::Sent;
        finish_now = true;
      } else if (finish_state_ == FinishState::None && pending_) {
        inflight_ = std::move(pending_);
        next = inflight_.get();
      } else {
        writing_ = false;
      }
    }
    if (next) StartWrite(next);
    if (finish_now) Finish(grpc::Status::OK);
  }

  void OnCancel() override { finish(); }

  void OnDone() override {
    if (auto hub = hub_.lock()) hub->remove(this);
  }

 private:
  enum class FinishState { None, Requested, Sent };
  std::weak_ptr<WatchHub> hub_;
  grpc::CallbackServerContext* ctx_;  // gRPC's, valid until OnDone
  std::mutex mu_;
  bool writing_ = false;
  bool cancelled_ = false;
  FinishState finish_state_ = FinishState::None;
  DeviceList inflight_;  // kept alive until OnWriteDone: gRPC reads it asynchronously
  DeviceList pending_;
};

WatchHub::WatchHub(DeviceList initial) : latest_(std::move(initial)) {}

grpc::ServerWriteReactor<v1beta1::ListAndWatchResponse>* WatchHub::open(grpc::CallbackServerContext* ctx) {
  auto reactor = std::make_shared<WatchReactor>(weak_from_this(), ctx);
  DeviceList first;
  bool closed = false;
  {
    std::lock_guard publish_lock(publish_mu_);
    {
      std::lock_guard lock(mu_);
      reactors_.push_back(reactor);
      first = latest_;
      closed = closed_;
    }
    if (closed) {
      reactor->finish();
    } else {
      reactor->push(std::move(first));
    }
  }
  return reactor.get();
}

void WatchHub::publish(DeviceList list) {
  std::lock_guard publish_lock(publish_mu_);
  std::vector<std::shared_ptr<WatchReactor>> targets;
  {
    std::lock_guard lock(mu_);
    latest_ = list;
    targets = reactors_;
  }
  for (auto& r : targets) r->push(list);
}

void WatchHub::close_all() {
  std::lock_guard publish_lock(publish_mu_);
  std::vector<std::shared_ptr<WatchReactor>> targets;
  {
    std::lock_guard lock(mu_);
    closed_ = true;
    targets = reactors_;
  }
  for (auto& r : targets) r->finish(/*cut=*/true);
}

void WatchHub::remove(const WatchReactor* reactor) {
  std::shared_ptr<WatchReactor> keep;  // destroyed after unlocking
  std::lock_guard lock(mu_);
  auto it = std::find_if(reactors_.begin(), reactors_.end(), [&](const auto& r) { return r.get() == reactor; });
  if (it != reactors_.end()) {
    keep = std::move(*it);
    reactors_.erase(it);
  }
}

size_t WatchHub::open_streams() const {
  std::lock_guard lock(mu_);
  return reactors_.size();
}

DeviceList WatchHub::latest() const {
  std::lock_guard lock(mu_);
  return latest_;
}

}  // namespace kgpu::server
