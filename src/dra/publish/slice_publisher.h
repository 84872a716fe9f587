#pragma once
// SlicePublisher: keeps the API server's ResourceSlices of this node equal to what kgpu publishes,
// one pool per DRA driver. publish() hands over the desired pools and returns at once; a worker
// thread LISTs the node's slices of each changed driver, diffs them (diff_slices) and creates,
// updates (with the listed resourceVersion) and deletes slices, bumping the pool generation on any
// change and writing nothing when nothing changed. A 409 Conflict (someone else wrote meanwhile)
// re-reads and retries at once; other failures are retried with capped backoff (logged once per
// change of problem). The worker exists only while there is work: publish() or resync() starts it,
// it sleeps through a due retry's backoff, and it ends once the API server holds what was
// published, so an idle daemon has no thread for it and nothing wakes up. stop() ends the request
// in flight at once.
//
// start() already runs a worker that reads the API version and the Node's uid (below), so the first
// publish() costs only a list and the writes.
//
// Owner: the slices name the Node as their owner (garbage-collected with it). SliceOptions::node_uid
// given: that one. Empty: the worker reads the Node's metadata.uid before its first pass; while it
// cannot (API server not answering yet, RBAC), the slices are published without an owner and the
// read is retried with backoff until it succeeds, and then every slice is rewritten with the owner.
//
// Version: the resource.k8s.io versions come from a ResourceApiDiscovery shared with the claim
// reads (one GET per process); ResourceSlices are written as v1 when served, else v1beta1.
//
// Drivers covered: the three of SliceOptions::drivers plus any in a published pool; a driver with no
// pool in the latest publication has its slices on this node deleted.
//
// Device taints (model/publication.h): pools are written with their taints until the API server shows
// it does not keep them: a write answered without the taints it carried (the field stripped:
// DRADeviceTaints off, or a version without it) or refused (400/422) for them. Then kgpu writes at
// once without what it cannot hold (TaintSupport: effect None, or every taint, the tainted devices
// left out as before taints) for the rest of the run, and says so once. Taints of effect None
// (informational) go out only where the API server is Kubernetes 1.35 or later: before, the
// scheduler keeps pods off a device with any untolerated taint, None included (check_none_taints).
//
// Memory shares (consumable capacity: allowMultipleAllocations, requestPolicy) likewise: a write
// answered without allowMultipleAllocations, or refused (400/422) naming it or requestPolicy, makes
// kgpu publish the shared GPUs as ordinary exclusive devices (with_share_support) for the rest of the
// run, say so once, and tell the owner (on_shares_refused), whose prepares must follow suit.
//
// Shared counters (dynamic MIG's counter sets, KEP-4815) likewise: they go out in the layout the
// API server's version needs (counter_layout_for: combined before 1.35, split from 1.35; an unknown
// version counts as older), and a write answered without the sharedCounters or consumesCounters it
// carried, or refused (400/422) naming them, makes kgpu publish each dynamic GPU as its full device
// only (with_counter_support: without counters the scheduler could hand out overlapping
// placements) for the rest of the run, say so once, and tell the owner (on_counters_refused).
//
// Watch (start_watch()): a second thread follows the node's slices (kube/watch_loop.h, filtered to
// spec.nodeName) and resyncs on every event for a covered driver, so a slice someone else deleted
// or edited is put back at once rather than at the next change. It is blocked in its read while
// nothing changes (no bookmarks asked for: they would wake it once a minute). kgpu's own writes
// come back as events too; the passes they cause are paced (Timing::resync_interval), so a burst
// costs one list per driver and no write (the diff finds nothing). Someone else's change is put
// back; one who keeps changing them gets repairs that back off (dra/repair_pacer.h).
//
// Daemon use: construct with the API server, the same SliceOptions as build_publication() (node
// name; node_uid empty so it is read) and the shared discovery; start(); start_watch();
// publish(publication.pools) after every rebuild (health, MIG layout, config); resync() when the
// kubelet re-registers the plugin (it may have wiped the slices); stop() on exit (slices stay);
// delete_all() for uninstall or when DRA is switched off.
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "core/result.h"
#include "dra/model/publication.h"
#include "dra/publish/repair_pacer.h"
#include "dra/publish/resource_api.h"
#include "dra/publish/slice_objects.h"
#include "kube/api_request.h"
#include "kube/api_server.h"
#include "kube/resource_slice_list.h"
#include "kube/watch_loop.h"

namespace kgpu::dra {

// The resource.k8s.io version kgpu writes, from the group's served versions: v1 when served, else
// v1beta1; an error naming what is served otherwise.
Result<SliceApi> choose_slice_api(const std::vector<std::string>& served_versions);

class SlicePublisher {
 public:
  struct Timing {
    std::chrono::milliseconds request_deadline{10000};
    std::chrono::milliseconds first_backoff{1000};
    std::chrono::milliseconds max_backoff{60000};
    int conflict_retries = 5;  // re-reads after a 409 within one pass before it counts as a failure
    // Passes a watch event causes: never closer than this; while someone keeps overwriting the
    // slices, the repairs back off from here up to max_backoff (dra/repair_pacer.h).
    std::chrono::milliseconds resync_interval{250};
    kube::WatchTiming watch;   // start_watch()'s loop
  };

  // `api_version`: the version to write; nullopt discovers it (GET /apis/resource.k8s.io, through
  // `discovery`, or a discovery of its own when null) before the first write. `options.node_uid`
  // empty: read from the Node (see above).
  SlicePublisher(kube::ApiServer server, SliceOptions options, std::optional<SliceApi> api_version = std::nullopt,
                 std::shared_ptr<ResourceApiDiscovery> discovery = nullptr);
  ~SlicePublisher();  // stop()
  SlicePublisher(const SlicePublisher&) = delete;
  SlicePublisher& operator=(const SlicePublisher&) = delete;

  void set_timing(const Timing& timing);  // before start()
  void start();  // from now on, a worker thread runs whenever there is something to write
  // The watch thread (after start()): it waits for the worker to know the API version, then
  // follows the node's slices until stop().
  void start_watch();
  // The pools to publish from now on (Publication::pools); the worker writes what differs.
  void publish(std::vector<DriverPool> pools);
  // Forget what was written, so the next pass re-reads every driver's slices (e.g. after the kubelet
  // restarted and may have wiped them). Wakes the worker.
  void resync();
  // Ends the request in flight and the worker; prompt whatever the API server does.
  void stop();
  // The first half of stop(), which never blocks: the request in flight is abandoned and the
  // threads are told to end; stop() then only joins them. Lets a caller stopping several parts
  // overlap their ends (daemon exit).
  void request_stop();

  // Uninstall / DRA switched off: ends the worker, then deletes every slice of this node for every
  // driver covered. Synchronous, bounded by `timeout`; stop() from another thread ends it at once.
  Status delete_all(std::chrono::milliseconds timeout);

  // One pass of the worker, on the caller's thread (for tests and one-shot tools; not while the
  // worker runs).
  Status sync(const std::vector<DriverPool>& pools);

  struct State {
    uint64_t published = 0;  // publish() calls
    uint64_t synced = 0;     // the publish() count the API server holds (== published: in sync)
    uint64_t writes = 0;     // creates, updates and deletes that succeeded
    uint64_t passes = 0;     // passes that ended (with or without a problem)
    std::string problem;     // the last pass's failure; empty when it succeeded
    std::map<std::string, int64_t> generations;  // per driver with a pool: its generation now
    std::string node_uid;    // the owner the slices name; empty while the Node's uid is unknown
    bool worker = false;     // a worker thread runs (only while there is work)
    uint64_t repairs = 0;    // passes a watch event caused that had to write (someone changed the slices)
    bool fighting = false;   // those repairs keep coming: another writer overwrites kgpu's slices (from the pacer)
    TaintSupport taints = TaintSupport::Full;  // what the API server was found to keep of device taints
    bool shares = true;  // the API server keeps consumable capacity (else shared GPUs go out whole)
    bool counters = true;  // the API server keeps shared counters (else dynamic GPUs go out whole)
    CounterLayout counter_layout = CounterLayout::Combined;  // from the API server's version
  };
  State state() const;
  // Whether shared GPUs are published with consumable capacity (see above); false for good once
  // the API server showed it does not keep it.
  bool shares_served() const;
  // Called (from the worker, without locks held) once when shares_served() turns false.
  void on_shares_refused(std::function<void()> listener);
  // Whether pools go out with their shared counters (see above); false for good once the API
  // server showed it does not keep them.
  bool counters_served() const;
  // Called (from the worker, without locks held) once when counters_served() turns false.
  void on_counters_refused(std::function<void()> listener);
  // Blocks until the latest publish() is in the API server, or `timeout` passes (false then).
  bool wait_synced(std::chrono::milliseconds timeout) const;

 private:
  struct Deadline {
    std::chrono::steady_clock::time_point until;
    std::chrono::milliseconds per_request;
    // The deadline of the next request; zero when the whole budget is spent.
    std::chrono::milliseconds next() const;
  };
  void run();
  void watch();
  // mu_ held: notifies, and starts a worker when there is work, none runs and start() was called.
  void wake_locked();
  // mu_ held: the Node's uid is still to be read.
  bool uid_wanted_locked() const;
  bool covers(const std::string& driver) const;
  // mu_ held: a pass a watch event caused ended well; `repaired`: it wrote. Paces the next, logs a fight.
  void note_resync_pass(bool repaired);
  static RepairPacer pacer_for(const Timing& timing);
  Status pass(const std::vector<DriverPool>& pools, const kube::ApiClient& client);
  // The options a pass writes with: the Node's uid once known, read first when it is due.
  SliceOptions pass_options(const kube::ApiClient& client);
  Result<std::string> read_node_uid(const kube::ApiClient& client) const;
  Status sync_driver(const std::string& driver, const DriverPool* desired, const SliceOptions& options,
                     const kube::ApiClient& client, const Deadline& deadline);
  // The API server does not keep what kgpu's taints need (`why`, for the log): write with `support`
  // from now on (never back up). True when that lowered it.
  bool lower_taint_support(TaintSupport support, const std::string& why);
  TaintSupport taint_support() const;
  // Kubernetes 1.34's allocator treats an untolerated taint of effect None like NoSchedule (1.35 ignores
  // None): informational taints go out only where the API server is 1.35 or later (GET /version once,
  // with the API version; an unknown version counts as older).
  void check_none_taints(const kube::ApiClient& client, const Deadline& deadline);
  bool lower_share_support(const std::string& why);  // true when shares were served until now
  bool lower_counter_support(const std::string& why);  // true when counters were served until now
  // Both above: a feature the API server does not keep is dropped once (the flag, the slices' state),
  // with `warning`, and the wiring's listener is told so it plans again.
  bool lower_support(bool SlicePublisher::*served, bool State::*in_state,
                     std::function<void()> SlicePublisher::*on_refused, const std::string& warning);
  CounterLayout counter_layout() const;
  Result<std::vector<kube::ListedSlice>> list(const std::string& driver, const kube::ApiClient& client,
                                              const Deadline& deadline) const;
  Result<SliceApi> api(const kube::ApiClient& client, const Deadline& deadline);
  std::vector<std::string> drivers(const std::vector<DriverPool>& pools) const;

  SliceOptions options_;  // node_uid: as given (the known one is node_uid_)
  const bool read_uid_;   // options_.node_uid was empty: read the Node's
  std::shared_ptr<ResourceApiDiscovery> discovery_;
  Timing timing_;
  kube::Interrupter worker_interrupter_;   // stop() and delete_all() end the worker's requests
  kube::Interrupter cleanup_interrupter_;  // stop() ends delete_all()'s requests
  kube::Interrupter watch_interrupter_;    // stop() ends the watch
  kube::ApiClient worker_client_;
  kube::ApiClient cleanup_client_;
  kube::ApiClient watch_client_;

  mutable std::mutex mu_;
  mutable std::condition_variable cv_;
  std::optional<SliceApi> api_;
  std::vector<DriverPool> desired_;
  State state_;
  bool started_ = false;
  bool stopping_ = false;
  bool worker_running_ = false;  // thread_ is in run(); false once it has left (then joinable, done)
  bool warmed_ = false;          // the first worker read the uid and the API version (or tried)
  bool dirty_ = false;  // a publish(), resync() or failed pass since the last pass began
  bool published_since_pass_ = false;  // a publish() since the last pass began (else: a resync)
  // Passes only a watch event asked for wait for this (RepairPacer::delay() after the last pass).
  std::chrono::steady_clock::time_point resync_not_before_{};
  RepairPacer pacer_ = pacer_for(timing_);  // paced by timing_ (set_timing() makes it anew)
  // Failed passes: the next may start at retry_at (the clock's epoch: at once); the backoff doubles.
  std::chrono::steady_clock::time_point retry_at_{};
  std::chrono::milliseconds backoff_{0};
  // The Node's uid: known (given or read), or the next read's time, its backoff and the problem
  // last logged.
  std::string node_uid_;
  std::chrono::steady_clock::time_point uid_retry_at_{};
  std::chrono::milliseconds uid_backoff_{0};
  std::string uid_problem_;
  uint64_t epoch_ = 0;  // resync() count: a pass that began before one records nothing
  // What each driver's slices hold now, as far as this process knows (nullopt: no pool, nothing
  // listed); a driver absent here is read from the API server on the next pass.
  std::map<std::string, std::optional<DriverPool>> written_;
  std::map<std::string, int64_t> last_generation_;  // the highest generation written per driver
  TaintSupport taint_support_ = TaintSupport::Full;  // in state_.taints too
  bool shares_served_ = true;                         // in state_.shares too
  bool counters_served_ = true;                       // in state_.counters too
  CounterLayout counter_layout_ = CounterLayout::Combined;  // in state_.counter_layout too
  std::function<void()> on_counters_refused_;
  bool version_checked_ = false;  // check_none_taints() ran (once per publisher)
  std::function<void()> on_shares_refused_;
  mutable std::atomic<bool> trim_after_pass_{false};  // a large answer was read: give memory back
  std::thread thread_;  // the worker (on demand)
  std::thread watch_thread_;
};

}  // namespace kgpu::dra
