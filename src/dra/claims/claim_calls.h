#pragma once
// The scheduling of the kubelet's DRA calls (issue 28, item 6): each NodePrepareResources /
// NodeUnprepareResources call is split into one task per claim. Tasks of one claim UID run one at
// a time in arrival order; tasks of different claims run in parallel on a bounded pool of threads.
// A call is finished once each of its tasks has run or been skipped:
//   - its budget (from the call's arrival) ran out before the task could start: the kubelet gives
//     up on the call at its own deadline (45 s) and will call again;
//   - its caller has gone (the kubelet cancelled, its connection closed, its grpc-timeout passed);
//   - the pool is stopping.
// A running task is never interrupted here: what it waits on (the API server, nvidia-smi) has its
// own timeouts and is ended by the daemon's cancellation at stop.
//
// Two lanes, so that what waits on the API server never delays what does not (issue 38, item 3):
//   - Local: tasks that need no API round trip (every unprepare; a repeated prepare of a claim
//     already prepared, answered from the record). Their own threads (local_threads), first come
//     first served: nothing in this lane waits on the API server, so nothing here queues behind a
//     slow read, however many of those there are.
//   - Api: tasks that read the claim from the API server (a first prepare). max_threads threads,
//     shared fairly between tenants (the claim's namespace): a tenant runs at most max_per_tenant
//     tasks at once (by default three quarters of the lane, so a tenant alone on the node still
//     gets most of it and another tenant always finds threads free), and a free thread takes the
//     oldest ready task of the tenant running the fewest. A namespace with 80 claims whose reads
//     hang holds 6 of 8 threads; another namespace's prepare starts at once, and an unprepare
//     never waits at all.
// The lane is the caller's judgement at submission (it asks the claim store); a wrong guess costs
// only latency, never order: tasks of one claim UID still run one at a time in arrival order
// across both lanes.
//
// Threads exist only while tasks are queued or running: a worker is started when a claim becomes
// ready in its lane and fewer of that lane's workers than runnable claims are free, up to the
// lane's bound, and it ends as soon as its lane has nothing runnable. An idle daemon has no thread
// here, and nothing here ever wakes up on a timer.
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

namespace kgpu::dra {

struct ClaimCallsOptions {
  size_t max_threads = 8;  // Api lane: claims of different UIDs handled at once
  // From a call's arrival until its last claim may start: below the kubelet's 45 s deadline, so the
  // kubelet gets the call's answer (a claim's error) rather than its own timeout.
  std::chrono::milliseconds budget{40'000};
  std::string thread_name = "kgpu-dra";  // as /proc/PID/task/*/comm shows the workers (15 chars)
  size_t local_threads = 8;  // Local lane: claims of different UIDs handled at once
  // Api lane tasks of one tenant running at once; 0: max_threads - max_threads / 4 (at least 1).
  size_t max_per_tenant = 0;
  // Run by the last worker as it ends, when no task is queued or running (outside the lock; what it
  // throws is logged): every claim's closures, each call's request and its answer's text are
  // released by then, so it is where memory a big call used can be given back to the system.
  std::function<void()> when_idle{};
};

// Where a task waits for a thread (above).
enum class Lane { Local, Api };

// Why a task did not run; its call answers the claim with this.
enum class Skipped { Budget, CallerGone, Stopping };
std::string describe(Skipped why);

class ClaimCalls {
 public:
  using Clock = std::chrono::steady_clock;

  struct Task {
    std::string uid;                   // tasks of one uid run one at a time, in arrival order
    std::function<void()> run;         // the work; records its own answer; must not throw (it is caught)
    std::function<void(Skipped)> skip;  // records that it did not run
    Lane lane = Lane::Api;
    std::string tenant{};  // the claim's namespace: Api lane fairness
  };
  struct Call {
    std::vector<Task> tasks;
    // Once every task has run or been skipped: on the thread of the last one (or, for a call with
    // no task, in submit()). Must not throw.
    std::function<void()> done;
    // Whether the caller has gone: asked just before each task starts (any thread, thread-safe).
    std::function<bool()> cancelled;
  };

  explicit ClaimCalls(ClaimCallsOptions options = {});
  ~ClaimCalls();  // stop()
  ClaimCalls(const ClaimCalls&) = delete;
  ClaimCalls& operator=(const ClaimCalls&) = delete;

  // Queues the call's tasks; any thread, never blocks on a task. False (nothing queued, nothing
  // called) once stop() has begun, or when no thread could be started for it: the caller answers
  // the call itself.
  bool submit(Call call);

  // Refuses new calls, skips (Skipped::Stopping) the queued tasks, waits for the running ones to
  // end and joins every thread. Idempotent; not from a task.
  void stop();
  // Allows submit() again after stop().
  void restart();

  // Workers alive now; tasks queued or running. For tests and benchmarks.
  size_t threads() const;
  size_t pending() const;
  bool stopping() const;  // stop() has begun

 private:
  struct CallState;
  struct Item {
    uint64_t seq = 0;  // arrival order
    std::shared_ptr<CallState> call;
    Task task;
  };
  struct Claim {
    std::list<Item> queue;  // the running item is no longer in it
    bool running = false;
  };
  // One lane's claims ready to run (their first queued task is of this lane), by tenant and
  // arrival, and its threads.
  struct LaneState {
    size_t bound = 1;     // threads
    size_t per_tenant = 1;  // running tasks of one tenant
    std::map<std::string, std::map<uint64_t, std::string>> ready;  // tenant -> first task's seq -> uid
    std::map<std::string, size_t> running_by_tenant;
    size_t workers = 0, running = 0;
  };

  LaneState& lane(Lane l) { return l == Lane::Local ? local_ : api_; }
  void make_ready_locked(const std::string& uid, const Item& front);
  // The uid whose task a free worker of `l` takes next (removed from the ready set), or empty.
  std::string pick_locked(LaneState& l);
  size_t runnable_locked(const LaneState& l) const;  // ready tasks a free worker could take now
  void work(Lane l, std::list<std::thread>::iterator self);
  // Starts workers while fewer are free than claims are runnable, in each lane; under mu_. False
  // when none runs at all and something is ready (no thread could be started).
  bool spawn_locked();
  // Counts one task of `call` as ended (`none`: the call has no task) and answers it after its last.
  static void finish_one(const std::shared_ptr<CallState>& call, bool none);

  const ClaimCallsOptions options_;
  mutable std::mutex mu_;
  std::condition_variable all_left_;
  std::unordered_map<std::string, Claim> claims_;  // uids with a task queued or running
  LaneState local_, api_;
  uint64_t next_seq_ = 0;
  size_t pending_ = 0;   // tasks queued or running
  size_t workers_ = 0;   // threads in work(), both lanes
  bool stopping_ = false;
  std::list<std::thread> threads_;  // running workers
  std::list<std::thread> left_;     // workers that have left work(), to join
};

}  // namespace kgpu::dra
