#pragma once
// A stand-in for the Kubernetes API server, just enough for kgpu's NodeWatcher: GET one Node and a
// watch of it (chunked stream of JSON lines). Plain HTTP on 127.0.0.1 (an ephemeral port, or a
// given one so a test can start it after the client first found nothing listening). set_labels()
// bumps the resourceVersion and pushes a MODIFIED event to every open watch. set_fault() makes
// every later request misbehave the way a broken or overloaded API server does.
//
// resource.k8s.io ResourceSlices (v1 and v1beta1 paths; served versions settable): API-group
// discovery, list with the spec.nodeName / spec.driver field selectors (paged when asked), watch
// (every change since the given resourceVersion, then each as it happens), get, create, update
// (resourceVersion required and checked: 409 on a stale one) and delete. Every body
// received is checked against the ResourceSlice schema essentials (required fields and their types,
// name formats, at most 128 devices, v1 vs v1beta1 device shape, no unknown fields): a malformed one
// gets 422 and is counted, so tests fail on it. fail_slice_writes() / fail_slice_lists() make the
// next requests answer a given status (409 once, 500...). ResourceClaims: served at every served
// version's path, each GET's version recorded (claim_reads()), stallable. The Node has a fixed
// metadata.uid (node_uid()), which the DRA driver puts in its slices' owner reference. The Node's
// status subresource takes a JSON Patch (application/json-patch+json only, else 415) of
// /status/capacity/<name> entries (add, replace, remove; 422 when it does not apply, as for a
// remove of a missing key); every patch is recorded (node_patches()), the result is node_capacity().
// nfd.k8s-sigs.io NodeFeatures and the Pods of their owner lookup: node_features() (fake_node_features.h).
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <condition_variable>
#include <map>
#include <memory>
#include <regex>
#include <set>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/quantity.h"
#include "support/fake_node_features.h"

namespace kgpu::test {

class FakeApiServer {
 public:
  enum class Fault {
    None,
    Status500,      // every request: HTTP 500 with a Status body
    Status401,      // every request: HTTP 401 (as for an expired token)
    Status410,      // watches: HTTP 410 Gone; GETs answer normally
    ErrorEvent410,  // watches: 200, then one ERROR event with code 410 (resourceVersion too old)
    Garbage,        // every request: 200 with a body that is not JSON
    WrongTypes,     // every request: 200 with JSON fields of the wrong type ("kind":5, "code":"x")
    Stall,          // every request: accepted, then nothing until the fault is cleared
    EndAtOnce,      // watches: 200 and an empty body; GETs answer normally
    EndlessLine,    // watches: 200, then bytes without a newline (up to 64 MiB)
  };

  // What the server does with ResourceSlice device taints (KEP-5055): refuse them as unknown fields
  // (422, a Kubernetes before them with strict field validation; the default), drop them and store
  // the rest (DRADeviceTaints off: the field is cleared before storing), keep them (stamping
  // timeAdded, as the API server does), or keep them but refuse effect None (servers before it).
  enum class DeviceTaints { Refused, Stripped, Served, NoneEffectRefused };
  // Consumable capacity on ResourceSlices (allowMultipleAllocations, capacity requestPolicy:
  // Kubernetes 1.34+, DRAConsumableCapacity): refused as unknown fields (a Kubernetes before it
  // with strict field validation; the default), dropped before storing (the gate off), or kept and
  // validated as the API server does.
  enum class ConsumableCapacity { Refused, Stripped, Served };
  // Partitionable devices on ResourceSlices (spec.sharedCounters, devices' consumesCounters:
  // KEP-4815, DRAPartitionableDevices): refused as unknown fields (the default), dropped before
  // storing (the gate off), or kept and validated (counter sets within 1.35's limits; from 1.35 on
  // a slice holding counter sets may hold no devices).
  enum class PartitionableDevices { Refused, Stripped, Served };

  // port 0: any free port.
  FakeApiServer(std::string node_name, std::map<std::string, std::string> labels, int port = 0)
      : node_(std::move(node_name)), labels_(std::move(labels)) {
    server_.Get("/api/v1/nodes/" + node_, [this](const httplib::Request& req, httplib::Response& res) {
      std::unique_lock lock(mu_);
      ++gets_;
      ++requests_;
      tokens_seen_.push_back(req.get_header_value("Authorization"));
      cv_.notify_all();
      if (refuse_token(req, res)) return;
      switch (wait_out_stall(lock)) {
        case Fault::Status500: return status(res, 500, "InternalError");
        case Fault::Status401: return status(res, 401, "Unauthorized");
        case Fault::Garbage: return res.set_content("<html>502 Bad Gateway", "text/html");
        case Fault::WrongTypes:
          return res.set_content(R"({"kind":5,"metadata":{"resourceVersion":7,"labels":{"a":1}}})", "application/json");
        default: return res.set_content(node_json().dump(), "application/json");
      }
    });
    server_.Get("/api/v1/nodes", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.get_param_value("watch") != "1") {
        res.status = 400;
        return;
      }
      std::unique_lock lock(mu_);
      ++requests_;
      tokens_seen_.push_back(req.get_header_value("Authorization"));
      cv_.notify_all();
      if (refuse_token(req, res)) return;
      switch (wait_out_stall(lock)) {
        case Fault::Status500: return status(res, 500, "InternalError");
        case Fault::Status401: return status(res, 401, "Unauthorized");
        case Fault::Status410: return status(res, 410, "Expired");
        case Fault::ErrorEvent410:
          return res.set_content(R"({"type":"ERROR","object":{"kind":"Status","code":410,"reason":"Expired"}})" "\n",
                                 "application/json");
        case Fault::Garbage: return res.set_content("{\"type\":\"MODIFIED\",\"object\":{\"kind\n\x01\x02garbage\n", "application/json");
        case Fault::WrongTypes:
          return res.set_content(R"({"type":"ERROR","object":{"kind":"Status","code":"x"}})" "\n", "application/json");
        case Fault::EndAtOnce: return res.set_content("", "application/json");
        case Fault::EndlessLine: return endless_line(res);
        default: break;
      }
      ++watches_;
      cv_.notify_all();
      size_t from = 0;
      try {
        from = req.has_param("resourceVersion") ? std::stoul(req.get_param_value("resourceVersion")) : 0;
      } catch (const std::exception&) {
        return status(res, 400, "BadRequest");
      }
      auto cursor = std::make_shared<size_t>(from);  // the newest resource version this stream has sent
      res.set_chunked_content_provider("application/json", [this, cursor, epoch = epoch_](size_t,
                                                                                          httplib::DataSink& sink) {
        std::unique_lock stream_lock(mu_);
        cv_.wait(stream_lock, [&] { return stopping_ || epoch != epoch_ || events_.size() > first_after(*cursor); });
        if (stopping_ || epoch != epoch_) {
          sink.done();
          return true;
        }
        for (size_t i = first_after(*cursor); i < events_.size(); ++i) {
          std::string line = events_[i].second + "\n";
          if (!sink.write(line.data(), line.size())) return false;
        }
        *cursor = events_.back().first;
        return true;
      });
    });
    server_.Patch("/api/v1/nodes/" + node_ + "/status", [this](const httplib::Request& req, httplib::Response& res) {
      std::unique_lock lock(mu_);
      ++requests_;
      tokens_seen_.push_back(req.get_header_value("Authorization"));
      node_patches_.push_back({req.get_header_value("Content-Type"), req.body});
      cv_.notify_all();
      if (refuse_token(req, res)) return;
      switch (wait_out_stall(lock)) {
        case Fault::Status500: return status(res, 500, "InternalError");
        case Fault::Status401: return status(res, 401, "Unauthorized");
        default: break;
      }
      if (req.get_header_value("Content-Type") != "application/json-patch+json")
        return status(res, 415, "UnsupportedMediaType");
      if (auto problem = apply_status_patch(req.body); !problem.empty()) return status(res, 422, problem);
      res.set_content(node_json().dump(), "application/json");
    });
    add_resource_slice_routes();
    // The release the DRA driver reads to decide whether the scheduler ignores effect None taints.
    server_.Get("/version", [this](const httplib::Request&, httplib::Response& res) {
      std::unique_lock lock(mu_);
      if (kubernetes_minor_ < 0) return status(res, 404, "NotFound");
      res.set_content(nlohmann::json{{"major", "1"},
                                     {"minor", std::to_string(kubernetes_minor_) + "+"},
                                     {"gitVersion", "v1." + std::to_string(kubernetes_minor_) + ".0"}}
                          .dump(),
                      "application/json");
    });
    server_.Get(R"(/apis/resource\.k8s\.io/([^/]+)/namespaces/([^/]+)/resourceclaims/([^/]+))",
                [this](const httplib::Request& req, httplib::Response& res) {
                  std::unique_lock lock(mu_);
                  claim_reads_.push_back(std::string(req.matches[1]));
                  cv_.notify_all();
                  if (stall_claim_reads_) {
                    cv_.wait(lock, [&] { return stopping_ || !stall_claim_reads_; });
                    return status(res, 503, "ServiceUnavailable");
                  }
                  if (!serves(std::string(req.matches[1]))) return status(res, 404, "NotFound");
                  auto it = claims_.find(std::string(req.matches[2]) + "/" + std::string(req.matches[3]));
                  if (it == claims_.end()) return status(res, 404, "NotFound");
                  res.set_content(it->second.dump(), "application/json");
                });
    if (port == 0) {
      port_ = server_.bind_to_any_port("127.0.0.1");
    } else {
      port_ = server_.bind_to_port("127.0.0.1", port) ? port : -1;
    }
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // bind_to_any_port already listens: connections queue until the accept loop runs. The loop
    // must have started before stop() can end it (httplib's stop() before that is lost, and the
    // destructor would wait for ever), so a server no test talked to is waited for here.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (port_ > 0 && !server_.is_running() && std::chrono::steady_clock::now() < deadline)
      std::this_thread::yield();
  }

  ~FakeApiServer() {
    {
      std::lock_guard lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    server_.stop();
    thread_.join();
  }

  // A loopback port that nothing listens on right now (for "connection refused", then a server
  // started there later).
  static int free_port() {
    int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    int port = -1;
    if (::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 &&
        ::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0)
      port = ntohs(addr.sin_port);
    ::close(fd);
    return port;
  }

  // NodeFeatures (nfd.k8s-sigs.io/v1alpha1) and Pods: stored objects, switches, counts.
  FakeNodeFeatures& node_features() { return node_features_; }

  bool bound() const { return port_ > 0; }
  int port() const { return port_; }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  void set_labels(std::map<std::string, std::string> labels) {
    {
      std::lock_guard lock(mu_);
      labels_ = std::move(labels);
      ++resource_version_;
      events_.emplace_back(resource_version_,
                           nlohmann::json{{"type", "MODIFIED"}, {"object", node_json()}}.dump());
    }
    cv_.notify_all();
  }

  // Every later request misbehaves as `fault` says; Fault::None restores normal answers (and
  // releases stalled requests, which then answer 503).
  // The Kubernetes 1.<minor> that GET /version reports (default 1.35); a negative minor answers 404.
  void set_kubernetes_minor(int minor) {
    std::lock_guard lock(mu_);
    kubernetes_minor_ = minor;
  }
  void set_device_taints(DeviceTaints mode) {
    std::lock_guard lock(mu_);
    device_taints_ = mode;
  }
  void set_consumable_capacity(ConsumableCapacity mode) {
    std::lock_guard lock(mu_);
    consumable_capacity_ = mode;
  }
  void set_partitionable_devices(PartitionableDevices mode) {
    std::lock_guard lock(mu_);
    partitionable_devices_ = mode;
  }

  void set_fault(Fault fault) {
    {
      std::lock_guard lock(mu_);
      fault_ = fault;
    }
    cv_.notify_all();
  }
  // Ends every open watch normally (as the API server does at timeoutSeconds).
  void end_watches() {
    {
      std::lock_guard lock(mu_);
      ++epoch_;
    }
    cv_.notify_all();
  }
  // Requests without "Authorization: Bearer <token>" get 401; empty: any token is accepted.
  void require_token(std::string token) {
    std::lock_guard lock(mu_);
    token_ = std::move(token);
  }

  int watches_opened() const {
    std::lock_guard lock(mu_);
    return watches_;
  }
  int gets() const {
    std::lock_guard lock(mu_);
    return gets_;
  }
  // Every request, GETs and watches, faulty or not.
  int requests() const {
    std::lock_guard lock(mu_);
    return requests_;
  }
  // The most bytes of an EndlessLine stream the server got to send before the client hung up.
  size_t endless_bytes_sent() const {
    std::lock_guard lock(mu_);
    return endless_sent_;
  }
  std::vector<std::string> authorizations() const {
    std::lock_guard lock(mu_);
    return tokens_seen_;
  }
  // ---- resource.k8s.io ResourceSlices ----

  struct SliceCounts {
    int discoveries = 0, lists = 0, watches = 0, gets = 0, creates = 0, updates = 0, deletes = 0;
    int rejected = 0;   // bodies that failed validation (422)
    int conflicts = 0;  // 409s answered (stale resourceVersion, name taken, or injected)
    int writes() const { return creates + updates + deletes; }
  };
  SliceCounts slice_counts() const {
    std::lock_guard lock(mu_);
    return slice_counts_;
  }
  // Blocks until `pred(slice_counts())` holds, re-checked on every request; false after the timeout.
  // `pred` runs under the server's lock: it must not call the server.
  template <typename Pred>
  bool wait_slice_counts(Pred pred, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return pred(slice_counts_); });
  }
  // Why each rejected body was rejected.
  std::vector<std::string> slice_rejections() const {
    std::lock_guard lock(mu_);
    return slice_rejections_;
  }
  // The versions resource.k8s.io serves (discovery and paths); default v1 and v1beta1.
  void serve_resource_versions(std::vector<std::string> versions) {
    std::lock_guard lock(mu_);
    resource_versions_ = std::move(versions);
  }
  // The next `times` slice writes (POST, PUT, DELETE) answer `status` with a Status body.
  void fail_slice_writes(int status, int times = 1) {
    std::lock_guard lock(mu_);
    write_failures_ = {status, times};
  }
  // The next `times` slice lists answer `status`.
  void fail_slice_lists(int status, int times = 1) {
    std::lock_guard lock(mu_);
    list_failures_ = {status, times};
  }
  // While set, slice writes are accepted and then left unanswered (a hung API server).
  void stall_slice_writes(bool stall) {
    {
      std::lock_guard lock(mu_);
      stall_slice_writes_ = stall;
    }
    cv_.notify_all();
  }
  // Blocks until at least `count` slice writes arrived (answered or not), or the timeout passes.
  bool wait_slice_writes(int count, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return slice_counts_.writes() >= count; });
  }
  // Lists answer at most `n` items per page with a continue token (0: everything at once).
  void set_slice_page_size(size_t n) {
    std::lock_guard lock(mu_);
    page_size_ = n;
  }
  // Stores a slice as another writer would (no validation); `object` in `version`'s shape.
  void put_slice(nlohmann::json object, const std::string& version = "v1") {
    std::lock_guard lock(mu_);
    const std::string name = object["metadata"]["name"].get<std::string>();
    store_slice(name, std::move(object), version);
  }
  // Someone else updated the slice: a new resourceVersion, so a writer's stale one conflicts.
  void touch_slice(const std::string& name) {
    std::lock_guard lock(mu_);
    auto it = slices_.find(name);
    if (it == slices_.end()) return;
    it->second.resource_version = ++slice_rv_;
    record_slice_event("MODIFIED", it->second);
  }
  // As touch_slice(), right after the next list is answered: a writer racing the lister.
  void touch_slice_after_next_list(std::string name) {
    std::lock_guard lock(mu_);
    touch_after_list_ = std::move(name);
  }
  // Someone else deleted the slice (watches see a DELETED event).
  void remove_slice(const std::string& name) {
    std::lock_guard lock(mu_);
    erase_slice(name);
  }
  // A ResourceClaim served at GET /apis/resource.k8s.io/<version>/namespaces/<ns>/resourceclaims/<name>
  // (every served version answers with the object as given).
  void put_resource_claim(nlohmann::json claim) {
    std::lock_guard lock(mu_);
    const std::string key = claim["metadata"]["namespace"].get<std::string>() + "/" +
                            claim["metadata"]["name"].get<std::string>();
    claims_[key] = std::move(claim);
  }
  // Node status patches (PATCH /api/v1/nodes/<name>/status), as received, whether applied or not.
  struct NodePatch {
    std::string content_type;
    std::string body;
  };
  std::vector<NodePatch> node_patches() const {
    std::lock_guard lock(mu_);
    return node_patches_;
  }
  // The Node's status.capacity as the JSON Patches left it (only those keys; starts empty).
  std::map<std::string, std::string> node_capacity() const {
    std::lock_guard lock(mu_);
    return capacity_;
  }
  // The query parameters of every slice list so far, in order.
  std::vector<std::map<std::string, std::string>> slice_list_params() const {
    std::lock_guard lock(mu_);
    return slice_list_params_;
  }
  // The query parameters of every slice watch so far, in order.
  std::vector<std::map<std::string, std::string>> slice_watch_params() const {
    std::lock_guard lock(mu_);
    return slice_watch_params_;
  }
  // The version of every ResourceClaim GET so far, in order ("v1", "v1beta2", ...).
  std::vector<std::string> claim_reads() const {
    std::lock_guard lock(mu_);
    return claim_reads_;
  }
  // While set, ResourceClaim GETs are accepted and then left unanswered (503 once released).
  void stall_claim_reads(bool stall) {
    {
      std::lock_guard lock(mu_);
      stall_claim_reads_ = stall;
    }
    cv_.notify_all();
  }
  // Blocks until at least `count` ResourceClaim GETs arrived (answered or not), or the timeout passes.
  bool wait_claim_reads(size_t count, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return claim_reads_.size() >= count; });
  }
  // The Node's metadata.uid (GET /api/v1/nodes/<name> and its watch events).
  std::string node_uid() const {
    std::lock_guard lock(mu_);
    return node_uid_;
  }
  // Blocks until `pred` holds for the stored slices (by name, as v1 serves them), re-checked on
  // every change; false after the timeout. `pred` runs under the server's lock: it must not call
  // the server.
  template <typename Pred>
  bool wait_slices(Pred pred, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] {
      std::map<std::string, nlohmann::json> all;
      for (const auto& [name, stored] : slices_) all[name] = served_slice(stored, "v1");
      return pred(all);
    });
  }
  // Every change of the stored slices so far, in order, with when it happened (for benchmarks that
  // replay them: when did the node's slices first become complete).
  struct SliceChange {
    std::chrono::steady_clock::time_point at;
    std::string type;  // ADDED, MODIFIED, DELETED
    std::string name;
    nlohmann::json object;  // as v1 serves it (DELETED: as it was)
  };
  std::vector<SliceChange> slice_history() const {
    std::lock_guard lock(mu_);
    std::vector<SliceChange> out;
    for (const auto& e : slice_events_)
      out.push_back({e.at, e.type, e.slice.object["metadata"].value("name", ""), served_slice(e.slice, "v1")});
    return out;
  }
  // Every stored slice by name, as `version` serves it (with metadata.resourceVersion).
  std::map<std::string, nlohmann::json> slices(const std::string& version = "v1") const {
    std::lock_guard lock(mu_);
    std::map<std::string, nlohmann::json> out;
    for (const auto& [name, stored] : slices_) out[name] = served_slice(stored, version);
    return out;
  }

  // Blocks until a (healthy) watch is open (or the timeout passes).
  bool wait_watching(std::chrono::milliseconds timeout, int at_least = 1) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return watches_ >= at_least; });
  }
  // Blocks until at least `count` requests arrived (or the timeout passes).
  bool wait_requests(int count, std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return requests_ >= count; });
  }

 private:
  // mu_ held. A stalled request waits here until the fault changes; returns the fault to apply.
  Fault wait_out_stall(std::unique_lock<std::mutex>& lock) {
    if (fault_ != Fault::Stall) return fault_;
    cv_.wait(lock, [&] { return stopping_ || fault_ != Fault::Stall; });
    return Fault::Status500;  // the client has most likely given up by now
  }
  bool refuse_token(const httplib::Request& req, httplib::Response& res) {
    if (token_.empty() || req.get_header_value("Authorization") == "Bearer " + token_) return false;
    status(res, 401, "Unauthorized");
    return true;
  }
  static void status(httplib::Response& res, int code, const std::string& reason) {
    res.status = code;
    res.set_content(nlohmann::json{{"kind", "Status"}, {"status", "Failure"}, {"reason", reason}, {"code", code}}.dump(),
                    "application/json");
  }
  void endless_line(httplib::Response& res) {
    auto sent = std::make_shared<size_t>(0);
    res.set_chunked_content_provider("application/json", [this, sent](size_t, httplib::DataSink& sink) {
      static const std::string kChunk(64 * 1024, 'x');
      {
        std::lock_guard lock(mu_);
        if (stopping_ || *sent >= 64u * 1024 * 1024) {
          sink.done();
          return true;
        }
      }
      *sent += kChunk.size();
      {
        std::lock_guard lock(mu_);
        endless_sent_ = std::max(endless_sent_, *sent);
      }
      return sink.write(kChunk.data(), kChunk.size());
    });
  }
  // ---- resource.k8s.io ResourceSlices ----
  struct StoredSlice {
    nlohmann::json object;  // as received, in `version`'s shape
    std::string version;    // "v1" or "v1beta1"
    size_t resource_version = 0;
    std::string uid;
  };
  struct Failures {
    int status = 0;
    int times = 0;
  };

  void add_resource_slice_routes() {
    using nlohmann::json;
    server_.Get("/apis/resource.k8s.io", [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(mu_);
      ++slice_counts_.discoveries;
      cv_.notify_all();
      json versions = json::array();
      for (const auto& v : resource_versions_)
        versions.push_back({{"groupVersion", "resource.k8s.io/" + v}, {"version", v}});
      json group{{"kind", "APIGroup"}, {"apiVersion", "v1"}, {"name", "resource.k8s.io"}, {"versions", versions}};
      if (!resource_versions_.empty()) group["preferredVersion"] = versions[0];
      res.set_content(group.dump(), "application/json");
    });
    const std::string collection = R"(/apis/resource\.k8s\.io/([a-z0-9]+)/resourceslices)";
    const std::string item = collection + "/([^/]+)";
    server_.Get(collection, [this](const httplib::Request& req, httplib::Response& res) {
      if (req.get_param_value("watch") == "1") return watch_slices(req, res);
      std::lock_guard lock(mu_);
      ++slice_counts_.lists;
      slice_list_params_.push_back(std::map<std::string, std::string>(req.params.begin(), req.params.end()));
      cv_.notify_all();
      const std::string version = req.matches[1];
      if (!serves(version)) return status(res, 404, "NotFound");
      if (take(list_failures_, res)) return;
      std::map<std::string, std::string> selector;
      if (req.has_param("fieldSelector")) {
        std::string text = req.get_param_value("fieldSelector");
        for (size_t start = 0; start <= text.size();) {
          size_t end = text.find(',', start);
          if (end == std::string::npos) end = text.size();
          const std::string term = text.substr(start, end - start);
          const size_t eq = term.find('=');
          if (eq == std::string::npos) return status(res, 400, "BadRequest");
          const std::string key = term.substr(0, eq);
          if (key != "spec.nodeName" && key != "spec.driver" && key != "metadata.name")
            return status(res, 400, "BadRequest");
          selector[key] = term.substr(eq + 1);
          start = end + 1;
        }
      }
      json items = json::array();
      for (const auto& [name, stored] : slices_) {
        json served = served_slice(stored, version);
        served.erase("apiVersion");  // list items carry no apiVersion / kind, as the real server's
        served.erase("kind");
        bool match = true;
        for (const auto& [key, want] : selector) {
          const json& spec = served["spec"];
          const std::string have = key == "metadata.name" ? name
                                   : key == "spec.driver" ? spec.value("driver", "")
                                                          : spec.value("nodeName", "");
          match = match && have == want;
        }
        if (match) items.push_back(std::move(served));
      }
      size_t offset = 0;
      if (req.has_param("continue")) {
        const std::string token = req.get_param_value("continue");
        if (token.rfind("o:", 0) != 0) return status(res, 400, "BadRequest");
        offset = std::stoul(token.substr(2));
      }
      // A page holds at most `limit` items (as the real server), or the size set_slice_page_size() gave.
      size_t per_page = page_size_;
      if (req.has_param("limit")) {
        const size_t limit = std::stoul(req.get_param_value("limit"));
        if (limit > 0) per_page = per_page == 0 ? limit : std::min(per_page, limit);
      }
      json page = json::array();
      for (size_t i = offset; i < items.size() && (per_page == 0 || page.size() < per_page); ++i)
        page.push_back(items[i]);
      json metadata{{"resourceVersion", std::to_string(slice_rv_)}};
      if (per_page != 0 && offset + page.size() < items.size())
        metadata["continue"] = "o:" + std::to_string(offset + page.size());
      if (!touch_after_list_.empty()) {
        if (auto it = slices_.find(touch_after_list_); it != slices_.end()) {
          it->second.resource_version = ++slice_rv_;
          record_slice_event("MODIFIED", it->second);
        }
        touch_after_list_.clear();
      }
      res.set_content(json{{"kind", "ResourceSliceList"},
                           {"apiVersion", "resource.k8s.io/" + version},
                           {"metadata", metadata},
                           {"items", page}}
                          .dump(),
                      "application/json");
    });
    server_.Get(item, [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard lock(mu_);
      ++slice_counts_.gets;
      const std::string version = req.matches[1];
      if (!serves(version)) return status(res, 404, "NotFound");
      auto it = slices_.find(req.matches[2]);
      if (it == slices_.end()) return status(res, 404, "NotFound");
      res.set_content(served_slice(it->second, version).dump(), "application/json");
    });
    server_.Post(collection, [this](const httplib::Request& req, httplib::Response& res) {
      std::unique_lock lock(mu_);
      ++slice_counts_.creates;
      cv_.notify_all();
      if (!wait_out_slice_stall(lock)) return status(res, 503, "ServiceUnavailable");
      const std::string version = req.matches[1];
      if (!serves(version)) return status(res, 404, "NotFound");
      if (take(write_failures_, res)) return;
      json body = json::parse(req.body, nullptr, false);
      if (auto problem = accept_taints(body, version); !problem.empty()) return reject(res, problem);
      strip_consumable_capacity(body, version);
      strip_counters(body, version);
      if (auto problem = validate_slice(body, version, device_taints_, consumable_capacity_ == ConsumableCapacity::Served,
                                        partitionable_devices_ == PartitionableDevices::Served, kubernetes_minor_);
          !problem.empty())
        return reject(res, problem);
      if (body["metadata"].contains("resourceVersion")) return reject(res, "metadata.resourceVersion must not be set on create");
      const std::string name = body["metadata"]["name"];
      if (slices_.count(name)) {
        ++slice_counts_.conflicts;
        return status(res, 409, "AlreadyExists");
      }
      store_slice(name, std::move(body), version);
      res.status = 201;
      res.set_content(served_slice(slices_.at(name), version).dump(), "application/json");
    });
    server_.Put(item, [this](const httplib::Request& req, httplib::Response& res) {
      std::unique_lock lock(mu_);
      ++slice_counts_.updates;
      cv_.notify_all();
      if (!wait_out_slice_stall(lock)) return status(res, 503, "ServiceUnavailable");
      const std::string version = req.matches[1];
      const std::string name = req.matches[2];
      if (!serves(version)) return status(res, 404, "NotFound");
      if (take(write_failures_, res)) return;
      json body = json::parse(req.body, nullptr, false);
      if (auto problem = accept_taints(body, version); !problem.empty()) return reject(res, problem);
      strip_consumable_capacity(body, version);
      strip_counters(body, version);
      if (auto problem = validate_slice(body, version, device_taints_, consumable_capacity_ == ConsumableCapacity::Served,
                                        partitionable_devices_ == PartitionableDevices::Served, kubernetes_minor_);
          !problem.empty())
        return reject(res, problem);
      if (body["metadata"]["name"] != name) return reject(res, "metadata.name does not match the path");
      auto it = slices_.find(name);
      if (it == slices_.end()) return status(res, 404, "NotFound");
      const json& rv = body["metadata"]["resourceVersion"];
      if (!rv.is_string() || rv.get<std::string>().empty())
        return reject(res, "metadata.resourceVersion: must be specified for an update");
      if (rv.get<std::string>() != std::to_string(it->second.resource_version)) {
        ++slice_counts_.conflicts;
        return status(res, 409, "Conflict");
      }
      const json old = served_slice(it->second, version);
      for (const char* key : {"driver", "nodeName"})
        if (old["spec"].value(key, "") != body["spec"].value(key, ""))
          return reject(res, std::string("spec.") + key + ": field is immutable");
      if (old["spec"]["pool"]["name"] != body["spec"]["pool"]["name"]) return reject(res, "spec.pool.name: field is immutable");
      const std::string uid = it->second.uid;
      body["metadata"].erase("resourceVersion");
      store_slice(name, std::move(body), version);
      slices_.at(name).uid = uid;
      res.set_content(served_slice(slices_.at(name), version).dump(), "application/json");
    });
    server_.Delete(item, [this](const httplib::Request& req, httplib::Response& res) {
      std::unique_lock lock(mu_);
      ++slice_counts_.deletes;
      cv_.notify_all();
      if (!wait_out_slice_stall(lock)) return status(res, 503, "ServiceUnavailable");
      const std::string version = req.matches[1];
      if (!serves(version)) return status(res, 404, "NotFound");
      if (take(write_failures_, res)) return;
      if (!erase_slice(req.matches[2])) return status(res, 404, "NotFound");
      res.set_content(json{{"kind", "Status"}, {"status", "Success"}}.dump(), "application/json");
    });
  }

  // mu_ held. A stalled slice write waits here; false when it was released by the server stopping.
  bool wait_out_slice_stall(std::unique_lock<std::mutex>& lock) {
    cv_.wait(lock, [&] { return stopping_ || !stall_slice_writes_; });
    return !stopping_;
  }
  bool serves(const std::string& version) const {
    return std::find(resource_versions_.begin(), resource_versions_.end(), version) != resource_versions_.end();
  }
  bool take(Failures& failures, httplib::Response& res) {
    if (failures.times <= 0) return false;
    --failures.times;
    if (failures.status == 409) ++slice_counts_.conflicts;
    status(res, failures.status, failures.status == 409 ? "Conflict" : "InternalError");
    return true;
  }
  void reject(httplib::Response& res, const std::string& problem) {
    ++slice_counts_.rejected;
    slice_rejections_.push_back(problem);
    res.status = 422;
    res.set_content(nlohmann::json{{"kind", "Status"}, {"status", "Failure"}, {"reason", "Invalid"}, {"code", 422},
                                   {"message", problem}}
                        .dump(),
                    "application/json");
  }
  void store_slice(const std::string& name, nlohmann::json object, const std::string& version) {
    StoredSlice stored;
    stored.object = std::move(object);
    stored.version = version;
    stored.resource_version = ++slice_rv_;
    stored.uid = "uid-" + std::to_string(stored.resource_version);
    const bool existed = slices_.count(name) != 0;
    slices_[name] = std::move(stored);
    record_slice_event(existed ? "MODIFIED" : "ADDED", slices_[name]);
  }
  // mu_ held. False when there was no such slice.
  bool erase_slice(const std::string& name) {
    auto it = slices_.find(name);
    if (it == slices_.end()) return false;
    StoredSlice last = it->second;
    last.resource_version = ++slice_rv_;
    record_slice_event("DELETED", last);
    slices_.erase(it);
    return true;
  }
  // mu_ held. Every change, for watches (which replay those after their resourceVersion).
  void record_slice_event(const std::string& type, const StoredSlice& slice) {
    slice_events_.push_back({type, slice, std::chrono::steady_clock::now()});
    cv_.notify_all();
  }
  size_t first_slice_event_after(size_t rv) const {
    size_t i = slice_events_.size();
    while (i > 0 && slice_events_[i - 1].slice.resource_version > rv) --i;
    return i;
  }
  // GET ...?watch=1: the events after resourceVersion (all kept ones without it), then each new
  // one as it happens, in the requested version's shape; ends with end_watches() or the server.
  void watch_slices(const httplib::Request& req, httplib::Response& res) {
    std::unique_lock lock(mu_);
    ++slice_counts_.watches;
    slice_watch_params_.push_back(std::map<std::string, std::string>(req.params.begin(), req.params.end()));
    ++requests_;
    cv_.notify_all();
    const std::string version = req.matches[1];
    if (!serves(version)) return status(res, 404, "NotFound");
    size_t from = 0;
    try {
      from = req.has_param("resourceVersion") ? std::stoul(req.get_param_value("resourceVersion")) : 0;
    } catch (const std::exception&) {
      return status(res, 400, "BadRequest");
    }
    auto cursor = std::make_shared<size_t>(from);
    res.set_chunked_content_provider("application/json", [this, cursor, version, epoch = epoch_](size_t,
                                                                                                 httplib::DataSink& sink) {
      std::unique_lock stream_lock(mu_);
      cv_.wait(stream_lock, [&] {
        return stopping_ || epoch != epoch_ || first_slice_event_after(*cursor) < slice_events_.size();
      });
      if (stopping_ || epoch != epoch_) {
        sink.done();
        return true;
      }
      for (size_t i = first_slice_event_after(*cursor); i < slice_events_.size(); ++i) {
        const auto& event = slice_events_[i];
        nlohmann::json object = served_slice(event.slice, version);
        object.erase("managedFields");
        const std::string line = nlohmann::json{{"type", event.type}, {"object", object}}.dump() + "\n";
        if (!sink.write(line.data(), line.size())) return false;
      }
      *cursor = slice_events_.back().slice.resource_version;
      return true;
    });
  }
  // The stored slice converted to `version` (v1beta1 nests attributes and capacity under "basic"),
  // with the metadata the server adds.
  static nlohmann::json served_slice(const StoredSlice& stored, const std::string& version) {
    nlohmann::json out = stored.object;
    out["apiVersion"] = "resource.k8s.io/" + version;
    out["metadata"]["resourceVersion"] = std::to_string(stored.resource_version);
    out["metadata"]["uid"] = stored.uid;
    out["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z";
    out["metadata"]["managedFields"] = nlohmann::json::array({{{"manager", "kgpu"}, {"operation", "Update"}}});
    if (stored.version != version && out["spec"].contains("devices") && out["spec"]["devices"].is_array()) {
      for (auto& d : out["spec"]["devices"]) {
        if (version == "v1beta1") {
          nlohmann::json basic = nlohmann::json::object();
          for (const char* key : {"attributes", "capacity", "consumesCounters", "taints"})
            if (d.contains(key)) {
              basic[key] = d[key];
              d.erase(key);
            }
          d["basic"] = basic;
        } else if (d.contains("basic")) {
          for (auto& [key, value] : d["basic"].items()) d[key] = value;
          d.erase("basic");
        }
      }
    }
    return out;
  }

  // The ResourceSlice schema essentials (k8s.io/api resource v1 / v1beta1 types and validation):
  // "" when `s` passes, else the first problem.
  // mu_ held. Before validation: strips the devices' taints (Stripped) or stamps them with timeAdded
  // (Served), as the API server does; "" or the problem of a write the mode refuses.
  std::string accept_taints(nlohmann::json& body, const std::string& version) {
    if (!body.is_object() || !body.contains("spec") || !body["spec"].is_object()) return "";
    auto& devices = body["spec"]["devices"];
    if (!devices.is_array()) return "";
    for (size_t i = 0; i < devices.size(); ++i) {
      auto& d = devices[i];
      if (!d.is_object()) continue;
      nlohmann::json& fields = version == "v1beta1" && d.contains("basic") && d["basic"].is_object() ? d["basic"] : d;
      if (!fields.contains("taints")) continue;
      if (device_taints_ == DeviceTaints::Stripped) {
        fields.erase("taints");
        continue;
      }
      if (!fields["taints"].is_array()) continue;  // validate_slice names it
      for (size_t k = 0; k < fields["taints"].size(); ++k) {
        auto& taint = fields["taints"][k];
        if (!taint.is_object()) continue;
        if (device_taints_ == DeviceTaints::NoneEffectRefused && taint.value("effect", "") == "None")
          return "spec.devices[" + std::to_string(i) + "].taints[" + std::to_string(k) +
                 "].effect: Unsupported value: \"None\": supported values: \"NoExecute\", \"NoSchedule\"";
        if (device_taints_ != DeviceTaints::Refused) taint["timeAdded"] = "2026-11-26T12:00:00Z";
      }
    }
    return "";
  }

  // mu_ held. Before validation: a server with the gate off drops the consumable-capacity fields.
  void strip_consumable_capacity(nlohmann::json& body, const std::string& version) const {
    if (consumable_capacity_ != ConsumableCapacity::Stripped) return;
    if (!body.is_object() || !body.contains("spec") || !body["spec"].is_object()) return;
    auto& devices = body["spec"]["devices"];
    if (!devices.is_array()) return;
    for (auto& d : devices) {
      if (!d.is_object()) continue;
      nlohmann::json& fields = version == "v1beta1" && d.contains("basic") && d["basic"].is_object() ? d["basic"] : d;
      fields.erase("allowMultipleAllocations");
      if (fields.contains("capacity") && fields["capacity"].is_object())
        for (auto& [name, value] : fields["capacity"].items())
          if (value.is_object()) value.erase("requestPolicy");
    }
  }

  // mu_ held. Before validation: a server with the gate off drops the partitionable-device fields.
  void strip_counters(nlohmann::json& body, const std::string& version) const {
    if (partitionable_devices_ != PartitionableDevices::Stripped) return;
    if (!body.is_object() || !body.contains("spec") || !body["spec"].is_object()) return;
    body["spec"].erase("sharedCounters");
    auto& devices = body["spec"]["devices"];
    if (!devices.is_array()) return;
    for (auto& d : devices) {
      if (!d.is_object()) continue;
      nlohmann::json& fields = version == "v1beta1" && d.contains("basic") && d["basic"].is_object() ? d["basic"] : d;
      fields.erase("consumesCounters");
    }
  }

  // spec.sharedCounters (counters_served): at most 8 sets, each a DNS-label name and 1..32
  // counters of DNS-label names with quantity values; "" when it passes.
  static std::string validate_counter_sets(const nlohmann::json& sets) {
    static const std::regex kLabel("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
    if (!sets.is_array()) return "spec.sharedCounters is not an array";
    if (sets.size() > 8) return "spec.sharedCounters: must have at most 8 items";
    std::set<std::string> names;
    size_t counters = 0;
    for (const auto& set : sets) {
      if (!set.is_object() || !set.contains("name") || !set["name"].is_string() ||
          !std::regex_match(set["name"].get<std::string>(), kLabel))
        return "spec.sharedCounters[].name is not a DNS label";
      if (!names.insert(set["name"].get<std::string>()).second) return "spec.sharedCounters[].name is not unique";
      if (!set.contains("counters") || !set["counters"].is_object() || set["counters"].empty())
        return "spec.sharedCounters[].counters is required";
      for (const auto& [name, value] : set["counters"].items())
        if (!std::regex_match(name, kLabel) || !value.is_object() || !value.contains("value") || !value["value"].is_string())
          return "spec.sharedCounters[].counters." + name + " is not a DNS-label counter with a quantity value";
      counters += set["counters"].size();
    }
    if (counters > 32) return "spec.sharedCounters: more than 32 counters in one slice";
    return "";
  }

  // A device's consumesCounters: at most 2 entries, each naming a counter set, 1..32 counters in all.
  static std::string validate_consumption(const nlohmann::json& consumes) {
    if (!consumes.is_array()) return "consumesCounters is not an array";
    if (consumes.size() > 2) return "consumesCounters: must have at most 2 items";
    size_t counters = 0;
    for (const auto& c : consumes) {
      if (!c.is_object() || !c.contains("counterSet") || !c["counterSet"].is_string() || c["counterSet"].get<std::string>().empty())
        return "consumesCounters[].counterSet is required";
      if (!c.contains("counters") || !c["counters"].is_object() || c["counters"].empty())
        return "consumesCounters[].counters is required";
      for (const auto& [name, value] : c["counters"].items())
        if (!value.is_object() || !value.contains("value") || !value["value"].is_string())
          return "consumesCounters[].counters." + name + " has no quantity value";
      counters += c["counters"].size();
    }
    if (counters > 32) return "consumesCounters: more than 32 counters";
    return "";
  }

  // capacity.<name>.requestPolicy as Kubernetes validates it: a default and a validRange whose
  // min is required; default within the range (min + k * step) and no more than the capacity.
  static std::string validate_request_policy(const std::string& name, const nlohmann::json& policy,
                                             const std::string& capacity_value) {
    // Amounts as whole numbers; UINT64_MAX stands for "not a quantity" (plain values keep GCC 12's
    // -Wmaybe-uninitialized quiet, which std::optional here does not).
    constexpr uint64_t kBad = UINT64_MAX;
    auto amount = [](const nlohmann::json& q) -> uint64_t {
      if (!q.is_string()) return kBad;
      auto v = kgpu::parse_quantity_bytes(q.get<std::string>());
      return v ? *v : kBad;
    };
    const std::string where = "capacity " + name + ".requestPolicy";
    if (!policy.is_object()) return where + " is not an object";
    for (const auto& [key, value] : policy.items())
      if (key != "default" && key != "validRange" && key != "validValues") return where + ": unknown field \"" + key + "\"";
    const uint64_t total = amount(nlohmann::json(capacity_value));
    const bool has_default = policy.contains("default");
    const uint64_t def = has_default ? amount(policy["default"]) : kBad;
    if (has_default && def == kBad) return where + ".default is not a quantity";
    if (!policy.contains("validRange")) return "";
    const nlohmann::json& range = policy["validRange"];
    if (!range.is_object() || !range.contains("min")) return where + ".validRange.min: Required value";
    const uint64_t min = amount(range["min"]);
    const uint64_t step = range.contains("step") ? amount(range["step"]) : 1;
    if (min == kBad || step == kBad || step == 0) return where + ".validRange: min and step must be quantities, step above 0";
    if (!has_default) return where + ".default: Required value when validRange is set";
    if (def < min || (def - min) % step != 0) return where + ".default: must be min plus whole steps";
    if (total != kBad && (min > total || def > total)) return where + ": min and default must not exceed the capacity";
    return "";
  }

  static std::string validate_taints(const nlohmann::json& taints, bool none_served) {
    static const std::regex kLabelValue("([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?");
    if (!taints.is_array() || taints.size() > 16) return "taints: must be a list of at most 16";
    for (const auto& t : taints) {
      if (!t.is_object()) return "taints[] is not an object";
      for (const auto& [key, value] : t.items())
        if (key != "key" && key != "value" && key != "effect" && key != "timeAdded")
          return "taints[]: unknown field \"" + key + "\"";
      if (!t.contains("key") || !t["key"].is_string() || t["key"].get<std::string>().empty())
        return "taints[].key: Required value";
      if (t.contains("value") && (!t["value"].is_string() || t["value"].get<std::string>().size() > 63 ||
                                  !std::regex_match(t["value"].get<std::string>(), kLabelValue)))
        return "taints[].value is not a label value";
      const std::string effect = t.value("effect", "");
      if (effect != "NoSchedule" && effect != "NoExecute" && !(none_served && effect == "None"))
        return "taints[].effect: Unsupported value: \"" + effect + "\"";
    }
    return "";
  }

  static std::string validate_slice(const nlohmann::json& s, const std::string& version,
                                    DeviceTaints taints = DeviceTaints::Refused, bool shares_served = false,
                                    bool counters_served = false, int kubernetes_minor = 35) {
    const bool taints_served = taints == DeviceTaints::Served || taints == DeviceTaints::NoneEffectRefused;
    using nlohmann::json;
    static const std::regex kDnsLabel("[a-z0-9]([-a-z0-9]*[a-z0-9])?");
    static const std::regex kDnsSubdomain("[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*");
    static const std::regex kCIdentifier("[A-Za-z_][A-Za-z0-9_]*");
    static const std::regex kSemver(
        "(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?(\\+[0-9A-Za-z.-]+)?");
    static const std::regex kQuantity("[+-]?[0-9]+(\\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|Ei|m|k|M|G|T|P|E|[eE][+-]?[0-9]+)?");
    auto only = [](const json& o, std::set<std::string> allowed, const std::string& where) -> std::string {
      for (const auto& [key, value] : o.items())
        if (!allowed.count(key)) return where + ": unknown field \"" + key + "\"";
      return "";
    };
    auto subdomain = [&](const std::string& v, size_t max) {
      return !v.empty() && v.size() <= max && std::regex_match(v, kDnsSubdomain);
    };
    if (!s.is_object()) return "the body is not a JSON object";
    if (s.value("apiVersion", json()) != "resource.k8s.io/" + version) return "apiVersion is not resource.k8s.io/" + version;
    if (s.value("kind", json()) != "ResourceSlice") return "kind is not ResourceSlice";
    if (auto p = only(s, {"apiVersion", "kind", "metadata", "spec"}, "object"); !p.empty()) return p;
    const json& meta = s.value("metadata", json());
    if (!meta.is_object()) return "metadata is missing";
    if (!meta.contains("name") || !meta["name"].is_string() || !subdomain(meta["name"], 253))
      return "metadata.name is not a DNS subdomain";
    if (auto p = only(meta, {"name", "resourceVersion", "ownerReferences", "labels", "uid"}, "metadata"); !p.empty()) return p;
    if (meta.contains("resourceVersion") && !meta["resourceVersion"].is_string()) return "metadata.resourceVersion is not a string";
    if (meta.contains("ownerReferences")) {
      if (!meta["ownerReferences"].is_array()) return "metadata.ownerReferences is not an array";
      for (const auto& o : meta["ownerReferences"]) {
        for (const char* key : {"apiVersion", "kind", "name", "uid"})
          if (!o.is_object() || !o.contains(key) || !o[key].is_string() || o[key].get<std::string>().empty())
            return std::string("metadata.ownerReferences[].") + key + " is required";
        if (o.contains("controller") && !o["controller"].is_boolean()) return "ownerReferences[].controller is not a bool";
      }
    }
    const json& spec = s.value("spec", json());
    if (!spec.is_object()) return "spec is missing";
    std::set<std::string> spec_fields{"driver", "pool", "nodeName", "nodeSelector", "allNodes", "devices"};
    if (counters_served) spec_fields.insert("sharedCounters");
    if (auto p = only(spec, spec_fields, "spec"); !p.empty()) return p;
    if (spec.contains("sharedCounters")) {
      if (auto p = validate_counter_sets(spec["sharedCounters"]); !p.empty()) return p;
      if (kubernetes_minor >= 35 && spec.contains("devices") && spec["devices"].is_array() && !spec["devices"].empty())
        return "spec: a slice with sharedCounters may not have devices (Kubernetes 1.35)";
    }
    if (!spec.contains("driver") || !spec["driver"].is_string() || !subdomain(spec["driver"], 63))
      return "spec.driver is not a DNS subdomain of at most 63 characters";
    const json& pool = spec.value("pool", json());
    if (!pool.is_object()) return "spec.pool is missing";
    if (auto p = only(pool, {"name", "generation", "resourceSliceCount"}, "spec.pool"); !p.empty()) return p;
    if (!pool.contains("name") || !pool["name"].is_string() || pool["name"].get<std::string>().empty() ||
        pool["name"].get<std::string>().size() > 253)
      return "spec.pool.name is required (at most 253 characters)";
    if (!pool.contains("generation") || !pool["generation"].is_number_integer() || pool["generation"].get<int64_t>() < 0)
      return "spec.pool.generation must be a non-negative integer";
    if (!pool.contains("resourceSliceCount") || !pool["resourceSliceCount"].is_number_integer() ||
        pool["resourceSliceCount"].get<int64_t>() <= 0)
      return "spec.pool.resourceSliceCount must be a positive integer";
    int placements = 0;
    if (spec.contains("nodeName")) {
      if (!spec["nodeName"].is_string() || !subdomain(spec["nodeName"], 253)) return "spec.nodeName is not a node name";
      ++placements;
    }
    if (spec.contains("nodeSelector")) ++placements;
    if (spec.contains("allNodes")) {
      if (!spec["allNodes"].is_boolean()) return "spec.allNodes is not a bool";
      if (spec["allNodes"].get<bool>()) ++placements;
    }
    if (placements != 1) return "exactly one of spec.nodeName, spec.nodeSelector, spec.allNodes is required";
    const json& devices = spec.value("devices", json::array());
    if (!devices.is_array()) return "spec.devices is not an array";
    const bool tainted = std::any_of(devices.begin(), devices.end(), [](const json& d) {
      auto has = [&](const char* key) {
        return d.is_object() && (d.contains(key) || (d.contains("basic") && d["basic"].is_object() && d["basic"].contains(key)));
      };
      return has("taints") || has("consumesCounters");
    });
    if (devices.size() > (tainted ? 64u : 128u))
      return tainted ? "spec.devices: must have at most 64 items when a device has taints"
                     : "spec.devices: must have at most 128 items";
    std::set<std::string> names;
    for (const auto& d : devices) {
      if (!d.is_object()) return "spec.devices[] is not an object";
      if (!d.contains("name") || !d["name"].is_string() || d["name"].get<std::string>().size() > 63 ||
          !std::regex_match(d["name"].get<std::string>(), kDnsLabel))
        return "spec.devices[].name is not a DNS label";
      if (!names.insert(d["name"].get<std::string>()).second) return "spec.devices[].name is not unique";
      const json* fields = &d;
      if (version == "v1beta1") {
        if (auto p = only(d, {"name", "basic"}, "spec.devices[]"); !p.empty()) return p;
        if (!d.contains("basic") || !d["basic"].is_object()) return "spec.devices[].basic is required in v1beta1";
        fields = &d["basic"];
        std::set<std::string> known{"attributes", "capacity"};
        if (taints_served) known.insert("taints");
        if (shares_served) known.insert("allowMultipleAllocations");
        if (counters_served) known.insert("consumesCounters");
        if (auto p = only(*fields, known, "spec.devices[].basic"); !p.empty()) return p;
      } else {
        std::set<std::string> known{"name", "attributes", "capacity"};
        if (taints_served) known.insert("taints");
        if (shares_served) known.insert("allowMultipleAllocations");
        if (counters_served) known.insert("consumesCounters");
        if (auto p = only(d, known, "spec.devices[]"); !p.empty()) return p;
      }
      if (fields->contains("consumesCounters"))
        if (auto p = validate_consumption((*fields)["consumesCounters"]); !p.empty()) return "spec.devices[]." + p;
      if (fields->contains("allowMultipleAllocations") && !(*fields)["allowMultipleAllocations"].is_boolean())
        return "spec.devices[].allowMultipleAllocations is not a bool";
      const bool multiple = fields->value("allowMultipleAllocations", false);
      if (fields->contains("taints"))
        if (auto p = validate_taints((*fields)["taints"], taints == DeviceTaints::Served); !p.empty())
          return "spec.devices[]." + p;
      const json& attributes = fields->value("attributes", json::object());
      const json& capacity = fields->value("capacity", json::object());
      if (!attributes.is_object() || !capacity.is_object()) return "attributes / capacity is not a map";
      if (attributes.size() + capacity.size() > 32) return "more than 32 attributes and capacities in one device";
      auto qualified = [&](const std::string& name) {
        const size_t slash = name.find('/');
        const std::string id = slash == std::string::npos ? name : name.substr(slash + 1);
        if (id.empty() || id.size() > 32 || !std::regex_match(id, kCIdentifier)) return false;
        return slash == std::string::npos || subdomain(name.substr(0, slash), 63);
      };
      for (const auto& [name, value] : attributes.items()) {
        if (!qualified(name)) return "attribute name \"" + name + "\" is not a qualified name";
        if (!value.is_object() || value.size() != 1) return "attribute " + name + " must have exactly one value";
        const std::string type = value.begin().key();
        const json& v = value.begin().value();
        if (type == "int") {
          if (!v.is_number_integer()) return "attribute " + name + ".int is not an integer";
        } else if (type == "bool") {
          if (!v.is_boolean()) return "attribute " + name + ".bool is not a bool";
        } else if (type == "string") {
          if (!v.is_string() || v.get<std::string>().size() > 64) return "attribute " + name + ".string is not a string of <= 64";
        } else if (type == "version") {
          if (!v.is_string() || v.get<std::string>().size() > 64 || !std::regex_match(v.get<std::string>(), kSemver))
            return "attribute " + name + ".version is not a semantic version";
        } else {
          return "attribute " + name + " has an unknown value type \"" + type + "\"";
        }
      }
      for (const auto& [name, value] : capacity.items()) {
        if (!qualified(name)) return "capacity name \"" + name + "\" is not a qualified name";
        if (!value.is_object() || !value.contains("value") || !value["value"].is_string() ||
            !std::regex_match(value["value"].get<std::string>(), kQuantity))
          return "capacity " + name + " has no quantity value";
        if (auto p = only(value, shares_served ? std::set<std::string>{"value", "requestPolicy"} : std::set<std::string>{"value"},
                          "capacity " + name);
            !p.empty())
          return p;
        if (value.contains("requestPolicy")) {
          if (!multiple)
            return "capacity " + name + ".requestPolicy: Forbidden: only for a device with allowMultipleAllocations";
          if (auto p = validate_request_policy(name, value["requestPolicy"], value["value"].get<std::string>()); !p.empty())
            return p;
        }
      }
    }
    return "";
  }

  // Index of the first event newer than resource version `version` (mu_ held).
  size_t first_after(size_t version) const {
    size_t i = 0;
    while (i < events_.size() && events_[i].first <= version) ++i;
    return i;
  }
  nlohmann::json node_json() const {
    nlohmann::json node = {{"kind", "Node"},
                           {"apiVersion", "v1"},
                           {"metadata",
                            {{"name", node_}, {"uid", node_uid_}, {"resourceVersion", std::to_string(resource_version_)},
                             {"labels", labels_}}}};
    if (!capacity_.empty()) node["status"]["capacity"] = capacity_;
    return node;
  }
  // A JSON Patch (RFC 6902) of the Node's status.capacity: add, replace and remove of
  // /status/capacity/<token> (RFC 6901 escapes undone), applied all or nothing. The reason it is
  // refused, empty when applied (the API server answers 422 for a patch that does not apply).
  std::string apply_status_patch(const std::string& body) {
    auto patch = nlohmann::json::parse(body, nullptr, false);
    if (!patch.is_array()) return "the JSON Patch is not an array";
    auto capacity = capacity_;
    static const std::string kPrefix = "/status/capacity/";
    for (const auto& op : patch) {
      if (!op.is_object() || !op.contains("op") || !op["op"].is_string() || !op.contains("path") ||
          !op["path"].is_string())
        return "a JSON Patch operation needs string op and path";
      const std::string path = op["path"];
      if (path.rfind(kPrefix, 0) != 0) return "this fake patches /status/capacity/<name> only, not " + path;
      std::string token = path.substr(kPrefix.size()), name;
      for (size_t i = 0; i < token.size(); ++i) {
        if (token[i] == '/') return "path " + path + " goes deeper than a capacity entry";
        if (token[i] != '~') {
          name += token[i];
        } else if (i + 1 < token.size() && (token[i + 1] == '0' || token[i + 1] == '1')) {
          name += token[++i] == '0' ? '~' : '/';
        } else {
          return "path " + path + " holds a '~' that is neither ~0 nor ~1";
        }
      }
      if (op["op"] == "add" || op["op"] == "replace") {
        if (!op.contains("value") || !op["value"].is_string()) return "a capacity value must be a quantity string";
        if (op["op"] == "replace" && !capacity.contains(name)) return "replace of a missing key " + path;
        capacity[name] = op["value"];
      } else if (op["op"] == "remove") {
        if (capacity.erase(name) == 0) return "unable to remove nonexistent key: " + path;
      } else {
        return "op " + op["op"].dump() + " is not supported by this fake";
      }
    }
    capacity_ = std::move(capacity);
    return "";
  }

  std::string node_;
  const std::string node_uid_ = "5e1f0000-0000-4000-8000-000000000001";
  std::map<std::string, std::string> labels_;
  size_t resource_version_ = 1;
  std::vector<std::pair<size_t, std::string>> events_;
  bool stopping_ = false;
  Fault fault_ = Fault::None;
  std::string token_;
  std::vector<std::string> tokens_seen_;
  int watches_ = 0, gets_ = 0, requests_ = 0;
  size_t endless_sent_ = 0;
  int epoch_ = 0;  // end_watches() count
  std::map<std::string, StoredSlice> slices_;
  std::map<std::string, nlohmann::json> claims_;  // by namespace/name
  std::vector<std::string> claim_reads_;          // the version of each claim GET
  std::vector<std::map<std::string, std::string>> slice_watch_params_;
  std::vector<std::map<std::string, std::string>> slice_list_params_;
  std::vector<NodePatch> node_patches_;
  std::map<std::string, std::string> capacity_;  // the Node's status.capacity
  bool stall_claim_reads_ = false;
  size_t slice_rv_ = 1000;
  struct SliceEvent {
    std::string type;
    StoredSlice slice;  // as it was then (resource_version: the event's)
    std::chrono::steady_clock::time_point at;
  };
  std::vector<SliceEvent> slice_events_;
  std::vector<std::string> resource_versions_{"v1", "v1beta1"};
  Failures write_failures_, list_failures_;
  size_t page_size_ = 0;
  bool stall_slice_writes_ = false;
  DeviceTaints device_taints_ = DeviceTaints::Refused;
  int kubernetes_minor_ = 35;
  ConsumableCapacity consumable_capacity_ = ConsumableCapacity::Refused;
  PartitionableDevices partitionable_devices_ = PartitionableDevices::Refused;
  std::string touch_after_list_;
  SliceCounts slice_counts_;
  std::vector<std::string> slice_rejections_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  httplib::Server server_;
  FakeNodeFeatures node_features_{server_};  // registers its routes before the server listens
  std::thread thread_;
  int port_ = 0;
};

}  // namespace kgpu::test
