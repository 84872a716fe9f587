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
// Threads exist only while tasks are queued or running: a worker is started when a claim becomes
// ready and fewer workers than ready claims are free, up to the bound, and it ends as soon as no
// claim is ready. An idle daemon has no thread here, and nothing here ever wakes up on a timer.
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
  size_t max_threads = 8;  // claims of different UIDs handled at once
  // From a call's arrival until its last claim may start: below the kubelet's 45 s deadline, so the
  // kubelet gets the call's answer (a claim's error) rather than its own timeout.
  std::chrono::milliseconds budget{40'000};
  std::string thread_name = "kgpu-dra";  // as /proc/PID/task/*/comm shows the workers (15 chars)
};

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

  void work(std::list<std::thread>::iterator self);
  // Starts workers while fewer are free than claims are ready; under mu_. False when no thread at
  // all could be started (and none runs).
  bool spawn_locked();
  void reap_locked();  // joins the workers that have left
  // Counts one task of `call` as ended (`none`: the call has no task) and answers it after its last.
  static void finish_one(const std::shared_ptr<CallState>& call, bool none);

  const ClaimCallsOptions options_;
  mutable std::mutex mu_;
  std::condition_variable all_left_;
  std::unordered_map<std::string, Claim> claims_;  // uids with a task queued or running
  std::map<uint64_t, std::string> ready_;          // not running, with a task queued: by its first task's seq
  uint64_t next_seq_ = 0;
  size_t pending_ = 0;   // tasks queued or running
  size_t running_ = 0;   // tasks running
  size_t workers_ = 0;   // threads in work()
  bool stopping_ = false;
  std::list<std::thread> threads_;  // running workers
  std::list<std::thread> left_;     // workers that have left work(), to join
};

}  // namespace kgpu::dra
