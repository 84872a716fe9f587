#include "dra/publish/slice_publisher.h"

#include <malloc.h>
#include <spdlog/spdlog.h>

#include <algorithm>
#include <cctype>
#include <exception>
#include <set>

#include "core/thread_name.h"
#include "dra/publish/slice_objects.h"
#include "dra/publish/slice_publisher_diff.h"
#include "kube/node_object.h"
#include "kube/resource_slice_list.h"

namespace kgpu::dra {
namespace {

// Kubernetes caps one object at about 1.5 MiB; a slice of 128 devices is a few hundred KiB. Lists
// ask for pages of kListPageSize slices (at most ~12 MiB even of the largest objects); a page or an
// answer beyond these bounds (a server ignoring `limit` and the field selector: issue 28, item 11,
// a 31 MiB list took the daemon from 14 to 760 MB) is refused instead of buffered and parsed.
constexpr size_t kMaxListBytes = 16 * 1024 * 1024;
constexpr size_t kMaxObjectBytes = 4 * 1024 * 1024;
constexpr int kListPageSize = 8;
constexpr int kMaxListPages = 1000;
// An answer this large leaves the heap fragmented by the parsed JSON: the memory goes back to the
// system once the pass has ended (malloc_trim), so one big list does not raise RSS for good.
constexpr size_t kTrimAfterBytes = 1024 * 1024;

const char* version_segment(SliceApi api) { return api == SliceApi::V1 ? "v1" : "v1beta1"; }

std::string collection_path(SliceApi api) {
  return std::string("/apis/resource.k8s.io/") + version_segment(api) + "/resourceslices";
}

// Query-string escaping for field selectors and continue tokens (RFC 3986 unreserved stay).
std::string query_escape(const std::string& text) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

// The start of an error answer, on one line and printable, for messages.
std::string excerpt(const std::string& body) {
  std::string out = body.substr(0, 300);
  for (char& c : out)
    if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) > 0x7e) c = ' ';
  return out.empty() ? out : ": " + out;
}

std::string status_hint(int status) {
  if (status == 401) return " (the service-account token was refused: expired or revoked?)";
  if (status == 403)
    return " (RBAC: the service account needs list/watch/create/update/delete on resource.k8s.io resourceslices; "
           "kgpu's admission policy also refuses slices of another node or driver with 403)";
  if (status == 404) return " (resource.k8s.io is not served: is DRA enabled in this cluster?)";
  return "";
}

Error http_error(const std::string& what, const kube::ApiAnswer& answer) {
  return Error::unavailable(what + ": HTTP " + std::to_string(answer.status) + status_hint(answer.status) +
                            excerpt(answer.body));
}

const char* kind_word(SliceWrite::Kind kind) {
  switch (kind) {
    case SliceWrite::Kind::Create: return "create";
    case SliceWrite::Kind::Update: return "update";
    case SliceWrite::Kind::Delete: return "delete";
  }
  return "write";
}

}  // namespace

Result<SliceApi> choose_slice_api(const std::vector<std::string>& served) {
  auto has = [&](const char* v) { return std::find(served.begin(), served.end(), v) != served.end(); };
  if (has("v1")) return SliceApi::V1;
  if (has("v1beta1")) return SliceApi::V1beta1;
  std::string list;
  for (const auto& v : served) list += (list.empty() ? "" : ", ") + v;
  return Error::precondition("resource.k8s.io serves " + (list.empty() ? std::string("no version") : list) +
                             "; kgpu writes ResourceSlices as v1 (Kubernetes 1.34+) or v1beta1 (1.32, 1.33)");
}

std::chrono::milliseconds SlicePublisher::Deadline::next() const {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(until - std::chrono::steady_clock::now());
  if (left <= std::chrono::milliseconds(0)) return std::chrono::milliseconds(0);
  return std::min(left, per_request);
}

SlicePublisher::SlicePublisher(kube::ApiServer server, SliceOptions options, std::optional<SliceApi> api_version,
                               std::shared_ptr<ResourceApiDiscovery> discovery)
    : options_(std::move(options)),
      read_uid_(options_.node_uid.empty()),
      discovery_(discovery ? std::move(discovery) : std::make_shared<ResourceApiDiscovery>()),
      worker_client_(server, worker_interrupter_),
      cleanup_client_(server, cleanup_interrupter_),
      watch_client_(std::move(server), watch_interrupter_),
      api_(api_version) {
  node_uid_ = options_.node_uid;
  state_.node_uid = node_uid_;
  backoff_ = timing_.first_backoff;
  uid_backoff_ = timing_.first_backoff;
}

SlicePublisher::~SlicePublisher() { stop(); }

RepairPacer SlicePublisher::pacer_for(const Timing& timing) {
  return RepairPacer({timing.resync_interval, timing.max_backoff});
}

void SlicePublisher::set_timing(const Timing& timing) {
  std::lock_guard lock(mu_);
  timing_ = timing;
  backoff_ = timing_.first_backoff;
  uid_backoff_ = timing_.first_backoff;
  pacer_ = pacer_for(timing_);
}

void SlicePublisher::start() {
  std::lock_guard lock(mu_);
  if (started_ || stopping_) return;
  started_ = true;
  wake_locked();
}

bool SlicePublisher::uid_wanted_locked() const { return read_uid_ && node_uid_.empty(); }

void SlicePublisher::wake_locked() {
  cv_.notify_all();
  if (!started_ || stopping_ || worker_running_ || !(dirty_ || uid_wanted_locked() || !warmed_)) return;
  // The previous worker cleared worker_running_ under mu_ as it left run(): it is ending, and
  // joining it takes no longer than a thread's exit.
  if (thread_.joinable()) thread_.join();
  // Called from the daemon's, the transport's and the watch's threads: nothing may escape.
  try {
    thread_ = std::thread([this] { run(); });
    worker_running_ = true;
    state_.worker = true;
  } catch (const std::exception& e) {
    spdlog::error("DRA slices: cannot start the worker thread ({}); trying again at the next change", e.what());
  }
}

void SlicePublisher::publish(std::vector<DriverPool> pools) {
  std::lock_guard lock(mu_);
  desired_ = std::move(pools);
  ++state_.published;
  dirty_ = true;
  published_since_pass_ = true;  // kgpu's own change: written at once, whatever the repairs' pace
  wake_locked();
}

void SlicePublisher::resync() {
  std::lock_guard lock(mu_);
  written_.clear();
  ++epoch_;
  if (state_.published > 0) dirty_ = true;
  wake_locked();
}

void SlicePublisher::request_stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;  // from here on no worker starts, so thread_ stays as it is
  }
  cv_.notify_all();
  worker_interrupter_.stop();
  cleanup_interrupter_.stop();
  watch_interrupter_.stop();
}

void SlicePublisher::stop() {
  request_stop();
  if (thread_.joinable()) thread_.join();
  if (watch_thread_.joinable()) watch_thread_.join();
}

void SlicePublisher::start_watch() {
  std::lock_guard lock(mu_);
  if (watch_thread_.joinable() || stopping_) return;
  watch_thread_ = std::thread([this] {
    name_this_thread("kgpu-dra-watch");  // watches the node's ResourceSlices
    watch();
  });
}

bool SlicePublisher::covers(const std::string& driver) const {
  std::lock_guard lock(mu_);
  const auto covered = drivers(desired_);
  return std::find(covered.begin(), covered.end(), driver) != covered.end();
}

void SlicePublisher::watch() {
  SliceApi api = SliceApi::V1;
  {
    // The worker's first pass discovers the version; until then there is nothing to watch.
    std::unique_lock lock(mu_);
    cv_.wait(lock, [&] { return stopping_ || api_.has_value(); });
    if (stopping_) return;
    api = *api_;
  }
  const std::string selected = collection_path(api) + "?fieldSelector=" +
                               query_escape("spec.nodeName=" + options_.node_name);
  kube::WatchTarget target{"the ResourceSlices of node " + options_.node_name,
                           "DRA slices",
                           selected + "&limit=1",  // only its resourceVersion is needed
                           selected,
                           "list/watch on resource.k8s.io resourceslices",
                           kMaxListBytes,
                           // No BOOKMARK once a minute: the idle daemon wakes up for nothing.
                           false};
  kube::WatchHandlers handlers;
  handlers.on_get = [](const std::string& body) -> Result<std::string> {
    auto list = kube::parse_resource_slice_list(body);
    if (!list) return list.error();
    return list->resource_version;
  };
  handlers.on_event = [this](std::string_view line) -> Result<kube::WatchEventHead> {
    auto event = kube::parse_slice_watch_event(line);
    if (!event) return event.error();
    // The watch asks for this node's slices only; a server (or proxy) that ignores the field
    // selector must not make every other node's change cost a LIST here.
    if (!event->driver.empty() && covers(event->driver) && event->node_name == options_.node_name) {
      spdlog::debug("DRA slices: {} event for a {} slice; checking this node's slices", event->type, event->driver);
      resync();
    }
    return kube::WatchEventHead{event->type, event->resource_version, event->error_code};
  };
  kube::WatchLoop(watch_client_, watch_interrupter_, std::move(target), std::move(handlers), timing_.watch).run();
}

SlicePublisher::State SlicePublisher::state() const {
  std::lock_guard lock(mu_);
  State out = state_;
  out.fighting = pacer_.fighting();
  return out;
}

bool SlicePublisher::wait_synced(std::chrono::milliseconds timeout) const {
  std::unique_lock lock(mu_);
  return cv_.wait_for(lock, timeout, [&] { return state_.synced == state_.published && !dirty_; });
}

void SlicePublisher::run() {
  name_this_thread("kgpu-dra-slices");  // writes the node's ResourceSlices while they differ
  using Clock = std::chrono::steady_clock;
  std::unique_lock lock(mu_);
  while (!stopping_) {
    const auto now = Clock::now();
    // A failure's backoff holds every pass; a pass only a watch event asked for also waits for the
    // repairs' pace (RepairPacer).
    const auto due = [&] { return published_since_pass_ ? retry_at_ : std::max(retry_at_, resync_not_before_); };
    const bool write_due = dirty_ && now >= due();
    const bool uid_due = uid_wanted_locked() && now >= uid_retry_at_;
    if (!warmed_ || (uid_due && state_.published == 0)) {
      // Started, nothing published yet: read what every pass needs (the Node's uid, the API
      // version) while the daemon is still discovering its devices, so its first publication
      // costs only a list and the writes. No pass before the first publish(): it would delete the
      // slices a previous run left. Failures are logged and retried by the passes.
      const bool first = !warmed_;
      warmed_ = true;
      lock.unlock();
      try {
        (void)pass_options(worker_client_);
        if (first)
          (void)api(worker_client_, Deadline{Clock::now() + timing_.request_deadline, timing_.request_deadline});
      } catch (...) {  // thread entry: nothing may escape
      }
      lock.lock();
      continue;
    }
    if (!write_due && !uid_due) {
      // In sync and nothing to retry: this worker ends; the next publish() or resync() starts one.
      if (!dirty_ && !uid_wanted_locked()) break;
      // A backoff runs (writes, or the uid read). During a write backoff only stop() or its end
      // ends the wait: a flapping health state must not hammer a failing API server. During a uid
      // backoff a publish() is written at once.
      auto until = uid_wanted_locked() ? uid_retry_at_ : due();
      if (dirty_) until = std::min(until, due());
      cv_.wait_until(lock, until, [&] { return stopping_ || (dirty_ && Clock::now() >= due()); });
      continue;
    }
    dirty_ = false;
    const bool resync_pass = !published_since_pass_;
    published_since_pass_ = false;
    const uint64_t writes_before = state_.writes;
    const auto pools = desired_;
    const uint64_t version = state_.published;
    lock.unlock();
    Status result = Error::internal("unexpected failure");
    // Thread entry: nothing may escape.
    try {
      result = pass(pools, worker_client_);
    } catch (const std::exception& e) {
      result = Error::internal(std::string("unexpected failure: ") + e.what());
    } catch (...) {
    }
    if (trim_after_pass_.exchange(false)) ::malloc_trim(0);
    lock.lock();
    if (stopping_) break;
    ++state_.passes;
    if (result) {
      if (!state_.problem.empty()) spdlog::info("DRA slices: the API server holds kgpu's slices again");
      state_.problem.clear();
      state_.synced = version;
      backoff_ = timing_.first_backoff;
      retry_at_ = {};
      if (resync_pass) note_resync_pass(state_.writes > writes_before);
      resync_not_before_ = Clock::now() + pacer_.delay();
    } else {
      if (result.error().message != state_.problem)
        spdlog::warn("DRA slices: {}; retrying with backoff", result.error().message);
      state_.problem = result.error().message;
      dirty_ = true;
      retry_at_ = Clock::now() + backoff_;
      backoff_ = std::min(backoff_ * 2, timing_.max_backoff);
    }
    cv_.notify_all();
  }
  worker_running_ = false;
  state_.worker = false;
  cv_.notify_all();
}

void SlicePublisher::note_resync_pass(bool repaired) {
  if (repaired) ++state_.repairs;
  switch (pacer_.resync_pass_ended(repaired)) {
    case RepairPacer::Change::FightStarted:
      spdlog::warn(
          "DRA slices: another writer keeps changing this node's ResourceSlices ({} repairs in a row); kgpu "
          "keeps putting them back, each repair waiting twice as long as the last (up to {} s). Find the "
          "writer: kubectl get resourceslices --field-selector spec.nodeName={} -o yaml --show-managed-fields",
          pacer_.repairs_in_a_row(), timing_.max_backoff.count() / 1000, options_.node_name);
      break;
    case RepairPacer::Change::FightEnded:
      spdlog::info("DRA slices: this node's ResourceSlices stay as kgpu wrote them again (the other writer stopped)");
      break;
    case RepairPacer::Change::None: break;
  }
}

Status SlicePublisher::sync(const std::vector<DriverPool>& pools) {
  auto result = pass(pools, worker_client_);
  std::lock_guard lock(mu_);
  ++state_.passes;
  state_.problem = result ? std::string() : result.error().message;
  return result;
}

std::vector<std::string> SlicePublisher::drivers(const std::vector<DriverPool>& pools) const {
  std::vector<std::string> out;
  auto add = [&](const std::string& d) {
    if (!d.empty() && std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  };
  for (const auto& p : pools) add(p.driver);
  add(options_.drivers.nvidia);
  add(options_.drivers.amd);
  add(options_.drivers.intel);
  return out;
}

SliceOptions SlicePublisher::pass_options(const kube::ApiClient& client) {
  SliceOptions options = options_;
  {
    std::lock_guard lock(mu_);
    options.node_uid = node_uid_;
    if (!read_uid_ || !node_uid_.empty() || std::chrono::steady_clock::now() < uid_retry_at_) return options;
  }
  auto uid = read_node_uid(client);
  std::lock_guard lock(mu_);
  if (uid) {
    if (!uid_problem_.empty())
      spdlog::info("DRA slices: read Node {}'s uid; its slices name it as their owner now", options_.node_name);
    uid_problem_.clear();
    node_uid_ = *uid;
    state_.node_uid = *uid;
    options.node_uid = *uid;
    // Whatever was written without the owner is rewritten with it: every driver is read again.
    written_.clear();
    ++epoch_;
  } else {
    if (uid.error().message != uid_problem_)
      spdlog::warn("DRA slices: cannot read Node {}'s uid ({}); publishing its slices without an owner until it "
                   "can be read",
                   options_.node_name, uid.error().message);
    uid_problem_ = uid.error().message;
    uid_retry_at_ = std::chrono::steady_clock::now() + uid_backoff_;
    uid_backoff_ = std::min(uid_backoff_ * 2, timing_.max_backoff);
  }
  return options;
}

Result<std::string> SlicePublisher::read_node_uid(const kube::ApiClient& client) const {
  const std::string path = "/api/v1/nodes/" + query_escape(options_.node_name);
  // A node read is small and quick; a server that holds it must not hold the slices for long.
  const auto deadline = std::min(timing_.request_deadline, std::chrono::milliseconds(2000));
  auto answer = client.get(path, deadline, kMaxObjectBytes);
  if (!answer) return answer.error();
  if (answer->status != 200)
    return Error::unavailable(kube::api_status_problem("GET " + path, *answer, "get on nodes"));
  auto node = kube::parse_node(answer->body);
  if (!node) return Error{node.error().code, "GET " + path + ": " + node.error().message};
  if (node->uid.empty()) return Error::invalid("GET " + path + ": the Node has no metadata.uid");
  return node->uid;
}

Status SlicePublisher::pass(const std::vector<DriverPool>& pools, const kube::ApiClient& client) {
  const SliceOptions options = pass_options(client);
  std::optional<Error> first_problem;
  for (const auto& driver : drivers(pools)) {
    const DriverPool* desired = nullptr;
    for (const auto& p : pools)
      if (p.driver == driver) desired = &p;
    // Each driver's pass has a budget of a few requests' deadlines: a slow server cannot hold the
    // worker longer than that, and stop() ends it at once.
    const Deadline deadline{std::chrono::steady_clock::now() + timing_.request_deadline * 8, timing_.request_deadline};
    // Written as the API server can hold it; once more when a write shows it holds less (the
    // support only goes down, so at most twice more).
    std::optional<DriverPool> shaped;
    Status status = ok_status();
    uint64_t epoch = 0;
    bool same = false;
    for (TaintSupport support = taint_support();;) {
      const bool shares = shares_served();
      const bool counters = counters_served();
      shaped = desired ? std::optional<DriverPool>(with_counter_support(
                             with_share_support(with_taint_support(*desired, support), shares), counters))
                       : std::nullopt;
      {
        std::lock_guard lock(mu_);
        epoch = epoch_;
        auto it = written_.find(driver);
        same = it != written_.end() && it->second == shaped;
      }
      if (same) break;  // the API server already holds this driver's pool
      status = sync_driver(driver, shaped ? &*shaped : nullptr, options, client, deadline);
      if (!status || (taint_support() == support && shares_served() == shares && counters_served() == counters)) break;
      support = taint_support();
    }
    if (same) continue;
    if (!status) {
      // The other drivers still get their pass; the first problem is reported.
      if (!first_problem) first_problem = status.error();
      continue;
    }
    std::lock_guard lock(mu_);
    if (epoch == epoch_) written_[driver] = std::move(shaped);
  }
  if (first_problem) return *first_problem;
  return ok_status();
}

Result<SliceApi> SlicePublisher::api(const kube::ApiClient& client, const Deadline& deadline) {
  bool check_version = false;
  {
    std::lock_guard lock(mu_);
    check_version = !version_checked_;
    version_checked_ = true;
    if (api_ && !check_version) return *api_;
  }
  if (check_version) check_none_taints(client, deadline);
  {
    std::lock_guard lock(mu_);
    if (api_) return *api_;
  }
  auto versions = discovery_->served(client, deadline.next());
  if (!versions) return versions.error();
  auto chosen = choose_slice_api(*versions);
  if (!chosen) return chosen.error();
  spdlog::info("DRA slices: writing resource.k8s.io/{} ResourceSlices", version_segment(*chosen));
  {
    std::lock_guard lock(mu_);
    api_ = *chosen;
  }
  cv_.notify_all();  // the watch waits for the version
  return *chosen;
}

Result<std::vector<kube::ListedSlice>> SlicePublisher::list(const std::string& driver, const kube::ApiClient& client,
                                                            const Deadline& deadline) const {
  SliceApi api = SliceApi::V1;
  {
    std::lock_guard lock(mu_);
    api = *api_;
  }
  const std::string base = collection_path(api) + "?fieldSelector=" +
                           query_escape("spec.nodeName=" + options_.node_name + ",spec.driver=" + driver) +
                           "&limit=" + std::to_string(kListPageSize);
  std::vector<kube::ListedSlice> slices;
  std::string token;
  for (int page = 0; page < kMaxListPages; ++page) {
    const std::string path = token.empty() ? base : base + "&continue=" + query_escape(token);
    auto answer = client.get(path, deadline.next(), kMaxListBytes);
    if (!answer) return answer.error();
    if (answer->status != 200) return http_error("GET " + path, *answer);
    if (answer->body.size() >= kTrimAfterBytes) trim_after_pass_ = true;
    auto parsed = kube::parse_resource_slice_list(answer->body);
    if (!parsed) return Error{parsed.error().code, "GET " + path + ": " + parsed.error().message};
    for (auto& item : parsed->items) {
      // The field selector should have done this; a server (or proxy) that ignored it must not make
      // kgpu delete or overwrite another node's or driver's slices.
      if (item.node_name != options_.node_name || item.driver != driver) continue;
      slices.push_back(std::move(item));
    }
    if (parsed->continue_token.empty()) return slices;
    token = std::move(parsed->continue_token);
  }
  return Error::unavailable("listing the ResourceSlices of " + driver + " took more than " +
                            std::to_string(kMaxListPages) + " pages");
}

Status SlicePublisher::sync_driver(const std::string& driver, const DriverPool* desired, const SliceOptions& options,
                                   const kube::ApiClient& client, const Deadline& deadline) {
  auto chosen = api(client, deadline);
  if (!chosen) return chosen.error();
  // The counter layout is known once api() read the server's version (the options were taken before).
  SliceOptions with_layout = options;
  with_layout.counter_layout = counter_layout();
  const std::string collection = collection_path(*chosen);
  for (int attempt = 0; attempt <= timing_.conflict_retries; ++attempt) {
    auto listed = list(driver, client, deadline);
    if (!listed) return listed.error();
    int64_t min_generation = 0;
    {
      std::lock_guard lock(mu_);
      auto it = last_generation_.find(driver);
      if (it != last_generation_.end()) min_generation = it->second;
    }
    const auto diff = diff_slices(desired, std::move(*listed), with_layout, *chosen, min_generation);
    bool conflict = false;
    bool reshape = false;  // the server keeps less of the taints than was written: the caller writes again
    size_t done = 0;
    for (const auto& write : diff.writes) {
      const std::string path = write.kind == SliceWrite::Kind::Create ? collection : collection + "/" + write.name;
      const std::string what = std::string(kind_word(write.kind)) + " ResourceSlice " + write.name;
      Result<kube::ApiAnswer> answer = Error::internal("not sent");
      switch (write.kind) {
        case SliceWrite::Kind::Create: answer = client.post(path, write.body, deadline.next(), kMaxObjectBytes); break;
        case SliceWrite::Kind::Update: answer = client.put(path, write.body, deadline.next(), kMaxObjectBytes); break;
        case SliceWrite::Kind::Delete: answer = client.remove(path, "", deadline.next(), kMaxObjectBytes); break;
      }
      if (!answer) return Error{answer.error().code, what + ": " + answer.error().message};
      const int status = answer->status;
      const bool gone = write.kind == SliceWrite::Kind::Delete && status == 404;  // deleted already: fine
      const bool sent_taints = write.kind != SliceWrite::Kind::Delete && write.body.find("\"taints\":") != std::string::npos;
      const bool sent_shares =
          write.kind != SliceWrite::Kind::Delete && write.body.find("\"allowMultipleAllocations\":") != std::string::npos;
      const bool sent_counters = write.kind != SliceWrite::Kind::Delete &&
                                 (write.body.find("\"sharedCounters\":") != std::string::npos ||
                                  write.body.find("\"consumesCounters\":") != std::string::npos);
      if (status == 200 || status == 201 || status == 202 || gone) {
        ++done;
        // Stored without allowMultipleAllocations: the server drops consumable capacity.
        if (sent_shares && answer->body.find("\"allowMultipleAllocations\"") == std::string::npos &&
            lower_share_support("stored " + write.name + " without allowMultipleAllocations")) {
          reshape = true;
          break;
        }
        // Stored without the counters it carried: the server drops partitionable devices.
        if (sent_counters && answer->body.find("\"sharedCounters\"") == std::string::npos &&
            answer->body.find("\"consumesCounters\"") == std::string::npos &&
            lower_counter_support("stored " + write.name + " without its shared counters")) {
          reshape = true;
          break;
        }
        // Stored without the taints it carried: the server drops the field. The caller writes again.
        if (sent_taints && answer->body.find("\"taints\"") == std::string::npos &&
            lower_taint_support(TaintSupport::Off, "stored " + write.name + " without its device taints")) {
          reshape = true;
          break;
        }
        continue;
      }
      if ((status == 400 || status == 422) && sent_shares &&
          (answer->body.find("allowMultipleAllocations") != std::string::npos ||
           answer->body.find("requestPolicy") != std::string::npos) &&
          lower_share_support("refused " + write.name + " with consumable capacity (HTTP " + std::to_string(status) +
                              excerpt(answer->body) + ")")) {
        reshape = true;
        break;
      }
      if ((status == 400 || status == 422) && sent_counters &&
          (answer->body.find("sharedCounters") != std::string::npos ||
           answer->body.find("consumesCounters") != std::string::npos) &&
          lower_counter_support("refused " + write.name + " with shared counters (HTTP " + std::to_string(status) +
                                excerpt(answer->body) + ")")) {
        reshape = true;
        break;
      }
      if ((status == 400 || status == 422) && sent_taints) {
        // Refused for them: effect None alone (servers before it name the value), or the field.
        const bool none_refused = taint_support() == TaintSupport::Full &&
                                  answer->body.find("None") != std::string::npos &&
                                  answer->body.find("effect") != std::string::npos;
        if (lower_taint_support(none_refused ? TaintSupport::NoInformational : TaintSupport::Off,
                                "refused " + write.name + " with its device taints (HTTP " + std::to_string(status) +
                                    excerpt(answer->body) + ")")) {
          reshape = true;
          break;
        }
      }
      // 409: changed (or created) by someone else since the LIST; 404 on an update: deleted since.
      // Either way the LIST is stale: read again and diff again.
      if (status == 409 || (write.kind == SliceWrite::Kind::Update && status == 404)) {
        conflict = true;
        break;
      }
      return http_error(what, *answer);
    }
    {
      std::lock_guard lock(mu_);
      state_.writes += done;
      if (done > 0) {
        int64_t& last = last_generation_[driver];
        last = std::max(last, diff.generation);
      }
      if (!conflict) {
        if (desired)
          state_.generations[driver] = diff.generation;
        else
          state_.generations.erase(driver);
      }
    }
    if (reshape) return ok_status();
    if (conflict) continue;
    if (!diff.writes.empty())
      spdlog::info("DRA slices: {} pool {} at generation {} ({} writes)", driver,
                   desired ? desired->pool : options_.node_name, diff.generation, diff.writes.size());
    return ok_status();
  }
  return Error::unavailable("ResourceSlices of " + driver + ": still conflicting after " +
                            std::to_string(timing_.conflict_retries + 1) + " attempts");
}

bool SlicePublisher::shares_served() const {
  std::lock_guard lock(mu_);
  return shares_served_;
}

void SlicePublisher::on_shares_refused(std::function<void()> listener) {
  std::lock_guard lock(mu_);
  on_shares_refused_ = std::move(listener);
}

bool SlicePublisher::lower_share_support(const std::string& why) {
  return lower_support(&SlicePublisher::shares_served_, &State::shares, &SlicePublisher::on_shares_refused_,
                       "the API server " + why +
                           "; from now on the GPUs of kgpu.dra.sharing.memory.gpus are published whole, as ordinary "
                           "exclusive devices (restart kgpu once the API server keeps consumable capacity: Kubernetes "
                           "1.34+ with the DRAConsumableCapacity feature)");
}

bool SlicePublisher::lower_support(bool SlicePublisher::*served, bool State::*in_state,
                                   std::function<void()> SlicePublisher::*on_refused, const std::string& warning) {
  std::function<void()> listener;
  {
    std::lock_guard lock(mu_);
    if (!(this->*served)) return false;
    this->*served = false;
    state_.*in_state = false;
    listener = this->*on_refused;
  }
  spdlog::warn("DRA slices: {}", warning);
  if (listener) listener();
  return true;
}

bool SlicePublisher::counters_served() const {
  std::lock_guard lock(mu_);
  return counters_served_;
}

CounterLayout SlicePublisher::counter_layout() const {
  std::lock_guard lock(mu_);
  return counter_layout_;
}

void SlicePublisher::on_counters_refused(std::function<void()> listener) {
  std::lock_guard lock(mu_);
  on_counters_refused_ = std::move(listener);
}

bool SlicePublisher::lower_counter_support(const std::string& why) {
  return lower_support(&SlicePublisher::counters_served_, &State::counters, &SlicePublisher::on_counters_refused_,
                       "the API server " + why +
                           "; from now on the GPUs of kgpu.dra.mig.dynamic are published as their full device only, "
                           "without MIG placements (restart kgpu once the API server keeps shared counters: "
                           "Kubernetes 1.34+ with the DRAPartitionableDevices feature)");
}

void SlicePublisher::check_none_taints(const kube::ApiClient& client, const Deadline& deadline) {
  auto version = read_kubernetes_version(client, deadline.next());
  {
    // The same answer says where shared counters go (an unknown version counts as older).
    std::lock_guard lock(mu_);
    counter_layout_ = version ? counter_layout_for(version->major, version->minor) : CounterLayout::Combined;
    state_.counter_layout = counter_layout_;
  }
  if (version && version->at_least(1, 35)) return;
  {
    std::lock_guard lock(mu_);
    if (taint_support_ != TaintSupport::Full) return;
    taint_support_ = TaintSupport::NoInformational;
    state_.taints = taint_support_;
  }
  const std::string server = version ? fmt::format("is Kubernetes {}.{}", version->major, version->minor)
                                     : "did not say its Kubernetes version (" + version.error().message + ")";
  spdlog::info("DRA slices: the API server {}; before 1.35 the scheduler keeps pods off a device with an untolerated "
               "taint of any effect, None included, so XIDs the health policy ignores are not published as taints",
               server);
}

TaintSupport SlicePublisher::taint_support() const {
  std::lock_guard lock(mu_);
  return taint_support_;
}

bool SlicePublisher::lower_taint_support(TaintSupport support, const std::string& why) {
  {
    std::lock_guard lock(mu_);
    if (static_cast<int>(support) <= static_cast<int>(taint_support_)) return false;
    taint_support_ = support;
    state_.taints = support;
  }
  spdlog::warn("DRA slices: the API server {}; from now on {} (restart kgpu once the API server keeps device "
               "taints: Kubernetes' DRADeviceTaints feature)",
               why,
               support == TaintSupport::NoInformational
                   ? "XIDs the health policy ignores are not shown as taints of effect None"
                   : "unhealthy devices are left out of the ResourceSlices instead of being published with a taint");
  return true;
}

Status SlicePublisher::delete_all(std::chrono::milliseconds timeout) {
  std::vector<DriverPool> pools;
  {
    std::lock_guard lock(mu_);
    stopping_ = true;  // the worker must not write again behind the deletes
    pools = desired_;
  }
  cv_.notify_all();
  worker_interrupter_.stop();
  watch_interrupter_.stop();  // its resyncs would only wake a worker that is gone
  if (thread_.joinable()) thread_.join();
  if (watch_thread_.joinable()) watch_thread_.join();
  const Deadline deadline{std::chrono::steady_clock::now() + timeout, timing_.request_deadline};
  std::optional<Error> first_problem;
  for (const auto& driver : drivers(pools)) {
    if (deadline.next().count() == 0) return Error::unavailable("deleting kgpu's ResourceSlices: out of time");
    auto status = sync_driver(driver, nullptr, options_, cleanup_client_, deadline);
    if (!status && !first_problem) first_problem = status.error();
  }
  if (first_problem) return *first_problem;
  std::lock_guard lock(mu_);
  written_.clear();
  return ok_status();
}

}  // namespace kgpu::dra
