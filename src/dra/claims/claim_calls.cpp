#include "dra/claims/claim_calls.h"

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

ClaimCalls::ClaimCalls(ClaimCallsOptions options) : options_(std::move(options)) {
  api_.bound = std::max<size_t>(options_.max_threads, 1);
  api_.per_tenant = options_.max_per_tenant ? options_.max_per_tenant : api_.bound - api_.bound / 4;
  api_.per_tenant = std::clamp<size_t>(api_.per_tenant, 1, api_.bound);
  local_.bound = std::max<size_t>(options_.local_threads, 1);
  local_.per_tenant = local_.bound;  // nothing here waits on the API server: first come first served
}

ClaimCalls::~ClaimCalls() { stop(); }

void ClaimCalls::make_ready_locked(const std::string& uid, const Item& front) {
  LaneState& l = lane(front.task.lane);
  l.ready[front.task.lane == Lane::Api ? front.task.tenant : std::string()].emplace(front.seq, uid);
}

std::string ClaimCalls::pick_locked(LaneState& l) {
  auto best = l.ready.end();
  size_t best_running = 0;
  for (auto it = l.ready.begin(); it != l.ready.end(); ++it) {
    const auto r = l.running_by_tenant.find(it->first);
    const size_t running = r == l.running_by_tenant.end() ? 0 : r->second;
    if (running >= l.per_tenant) continue;
    if (best == l.ready.end() || running < best_running ||
        (running == best_running && it->second.begin()->first < best->second.begin()->first)) {
      best = it;
      best_running = running;
    }
  }
  if (best == l.ready.end()) return {};
  auto first = best->second.begin();
  std::string uid = std::move(first->second);
  best->second.erase(first);
  if (best->second.empty()) l.ready.erase(best);
  return uid;
}

size_t ClaimCalls::runnable_locked(const LaneState& l) const {
  size_t n = 0;
  for (const auto& [tenant, queue] : l.ready) {
    const auto r = l.running_by_tenant.find(tenant);
    const size_t running = r == l.running_by_tenant.end() ? 0 : r->second;
    if (running < l.per_tenant) n += std::min(queue.size(), l.per_tenant - running);
  }
  return n;
}

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
      const bool first = !claim.running && claim.queue.empty();
      std::string uid = task.uid;
      claim.queue.push_back(Item{next_seq_++, state, std::move(task)});
      if (first) make_ready_locked(uid, claim.queue.front());
      ++pending_;
    }
    accepted = spawn_locked();
    if (!accepted) {
      // No worker at all: nothing queued before this call either (a queued task always has one),
      // so dropping everything drops this call only.
      claims_.clear();
      local_.ready.clear();
      api_.ready.clear();
      pending_ = 0;
    }
    gone.swap(left_);
  }
  for (auto& t : gone) t.join();  // threads that have left work(): each is about to end
  if (accepted && call.tasks.empty()) finish_one(state, true);
  return accepted;
}

bool ClaimCalls::spawn_locked() {
  for (Lane which : {Lane::Local, Lane::Api}) {
    LaneState& l = lane(which);
    while (l.workers < l.bound && l.workers - l.running < runnable_locked(l)) {
      try {
        threads_.emplace_back();
        auto self = std::prev(threads_.end());
        // The worker takes mu_ before it touches `self`: the assignment is done by then.
        *self = std::thread([this, which, self] { work(which, self); });
        ++l.workers;
        ++workers_;
      } catch (const std::exception& e) {
        threads_.pop_back();
        spdlog::error("DRA: cannot start a thread for the kubelet's calls ({} running): {}", workers_, e.what());
        break;
      }
    }
  }
  return workers_ > 0 || (local_.ready.empty() && api_.ready.empty());
}

void ClaimCalls::work(Lane which, std::list<std::thread>::iterator self) {
  name_this_thread(options_.thread_name.c_str());  // prepares and unprepares claims (may wait on the API server)
  LaneState& l = lane(which);
  std::unique_lock lock(mu_);
  for (std::string uid = pick_locked(l); !uid.empty(); uid = pick_locked(l)) {
    Claim& claim = claims_.at(uid);
    Item item = std::move(claim.queue.front());
    claim.queue.pop_front();
    claim.running = true;
    const std::string tenant = which == Lane::Api ? item.task.tenant : std::string();
    ++l.running;
    ++l.running_by_tenant[tenant];
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
    --l.running;
    if (--l.running_by_tenant[tenant] == 0) l.running_by_tenant.erase(tenant);
    --pending_;
    Claim& done = claims_.at(uid);
    done.running = false;
    if (done.queue.empty()) {
      claims_.erase(uid);
    } else {
      make_ready_locked(uid, done.queue.front());
      // Its next task may be of the other lane, or of a tenant that was at its bound: a worker for
      // it. A worker that cannot be started leaves it to the ones running.
      (void)spawn_locked();
    }
  }
  // Nothing runnable in this lane: this worker ends (a claim queued behind a running one is made
  // ready by the worker running it, and a task held back by its tenant's bound by the worker that
  // ends one of that tenant's tasks).
  --l.workers;
  --workers_;
  left_.splice(left_.end(), threads_, self);
  const bool idle = workers_ == 0 && pending_ == 0 && !stopping_;
  all_left_.notify_all();
  lock.unlock();
  // stop() joins this thread before the pool goes away, so `this` outlives the hook.
  if (idle && options_.when_idle) {
    try {
      options_.when_idle();
    } catch (const std::exception& e) {
      spdlog::error("DRA: the claim calls' idle hook failed: {}", e.what());
    } catch (...) {
      spdlog::error("DRA: the claim calls' idle hook failed");
    }
  }
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
