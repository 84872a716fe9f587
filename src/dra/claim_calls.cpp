#include "dra/claim_calls.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <atomic>
#include <optional>

#include "core/thread_name.h"

namespace kgpu::dra {

struct ClaimCalls::CallState {
  Clock::time_point deadline;
  std::function<bool()> cancelled;
  std::function<void()> done;
  std::atomic<size_t> remaining{0};
};

std::string describe(Skipped why) {
  switch (why) {
    case Skipped::Budget:
      return "not started within the call's time budget (an earlier call for this claim, or other claims, held "
             "it); call again";
    case Skipped::CallerGone:
      return "the call was cancelled before this claim was handled";
    case Skipped::Stopping:
      return "the DRA driver is stopping; call again";
  }
  return "not handled";
}

ClaimCalls::ClaimCalls(ClaimCallsOptions options) : options_(std::move(options)) {}

ClaimCalls::~ClaimCalls() { stop(); }

bool ClaimCalls::submit(Call call) {
  auto state = std::make_shared<CallState>();
  state->deadline = Clock::now() + options_.budget;
  state->cancelled = std::move(call.cancelled);
  state->done = std::move(call.done);
  state->remaining = call.tasks.size();
  std::list<std::thread> gone;
  bool accepted = false;
  {
    std::lock_guard lock(mu_);
    if (stopping_) return false;
    for (auto& task : call.tasks) {
      Claim& claim = claims_[task.uid];
      uint64_t seq = next_seq_++;
      if (!claim.running && claim.queue.empty()) ready_.emplace(seq, task.uid);
      claim.queue.push_back(Item{seq, state, std::move(task)});
      ++pending_;
    }
    accepted = spawn_locked();
    if (!accepted) {
      // No worker at all: nothing queued before this call either (a queued task always has one),
      // so dropping everything drops this call only.
      claims_.clear();
      ready_.clear();
      pending_ = 0;
    }
    gone.swap(left_);
  }
  for (auto& t : gone) t.join();  // threads that have left work(): each is about to end
  if (accepted && call.tasks.empty()) finish_one(state, true);
  return accepted;
}

bool ClaimCalls::spawn_locked() {
  const size_t bound = std::max<size_t>(options_.max_threads, 1);
  while (workers_ < bound && workers_ - running_ < ready_.size()) {
    try {
      threads_.emplace_back();
      auto self = std::prev(threads_.end());
      // The worker takes mu_ before it touches `self`: the assignment is done by then.
      *self = std::thread([this, self] { work(self); });
      ++workers_;
    } catch (const std::exception& e) {
      threads_.pop_back();
      spdlog::error("DRA: cannot start a thread for the kubelet's calls ({} running): {}", workers_, e.what());
      break;
    }
  }
  return workers_ > 0 || ready_.empty();
}

void ClaimCalls::work(std::list<std::thread>::iterator self) {
  name_this_thread(options_.thread_name.c_str());  // prepares and unprepares claims (may wait on the API server)
  std::unique_lock lock(mu_);
  while (!ready_.empty()) {
    auto first = ready_.begin();
    std::string uid = std::move(first->second);
    ready_.erase(first);
    Claim& claim = claims_.at(uid);
    Item item = std::move(claim.queue.front());
    claim.queue.pop_front();
    claim.running = true;
    ++running_;
    const bool stopping = stopping_;
    lock.unlock();

    std::optional<Skipped> skipped;
    if (stopping) {
      skipped = Skipped::Stopping;
    } else if (Clock::now() >= item.call->deadline) {
      skipped = Skipped::Budget;
    } else {
      try {
        if (item.call->cancelled && item.call->cancelled()) skipped = Skipped::CallerGone;
      } catch (...) {
      }
    }
    try {
      if (skipped) {
        if (item.task.skip) item.task.skip(*skipped);
      } else if (item.task.run) {
        item.task.run();
      }
    } catch (const std::exception& e) {
      spdlog::error("DRA: handling claim {} failed: {}", uid, e.what());
    } catch (...) {
      spdlog::error("DRA: handling claim {} failed", uid);
    }
    finish_one(item.call, false);
    item = Item{};  // its closures go outside the lock

    lock.lock();
    --running_;
    --pending_;
    Claim& done = claims_.at(uid);
    done.running = false;
    if (done.queue.empty()) claims_.erase(uid);
    else ready_.emplace(done.queue.front().seq, uid);
  }
  // Nothing is ready: this worker ends (a claim queued behind a running one is picked up by the
  // worker running it).
  --workers_;
  left_.splice(left_.end(), threads_, self);
  all_left_.notify_all();
}

void ClaimCalls::finish_one(const std::shared_ptr<CallState>& call, bool none) {
  if (!none && call->remaining.fetch_sub(1) != 1) return;
  if (!call->done) return;
  try {
    call->done();
  } catch (const std::exception& e) {
    spdlog::error("DRA: answering the kubelet's call failed: {}", e.what());
  } catch (...) {
    spdlog::error("DRA: answering the kubelet's call failed");
  }
}

void ClaimCalls::stop() {
  std::list<std::thread> gone;
  {
    std::unique_lock lock(mu_);
    stopping_ = true;  // the workers skip what is queued and end; none starts any more
    all_left_.wait(lock, [&] { return workers_ == 0; });
    gone.swap(left_);
  }
  for (auto& t : gone) t.join();
}

void ClaimCalls::restart() {
  std::lock_guard lock(mu_);
  stopping_ = false;
}

size_t ClaimCalls::threads() const {
  std::lock_guard lock(mu_);
  return workers_;
}

size_t ClaimCalls::pending() const {
  std::lock_guard lock(mu_);
  return pending_;
}

bool ClaimCalls::stopping() const {
  std::lock_guard lock(mu_);
  return stopping_;
}

}  // namespace kgpu::dra
