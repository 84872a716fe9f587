#pragma once
// NodeWatcher: follows this node's Node object through the API server (GET, then a watch stream
// filtered to the one Node; kube/watch_loop.h) and reports its labels whenever they change. One
// thread, which sleeps in the watch's read (the server sends events; no polling). Every request is
// bounded (deadline, size) and ended at once by stop(), so a hung API server delays neither
// start-up nor exit. Failures are retried with backoff (1 s doubling to 30 s) and logged once per
// change of problem; after a 410 Gone, a malformed event or an ERROR event the watch starts again
// from a fresh GET, so no change is missed.
#include <chrono>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <thread>

#include "core/result.h"
#include "kube/api_request.h"
#include "kube/api_server.h"
#include "kube/node_object.h"
#include "kube/watch_loop.h"

namespace kgpu::kube {

// Kubernetes caps an object at about 1.5 MiB (etcd's request limit); a Node answer or one watch
// line beyond this is refused instead of buffered.
inline constexpr size_t kMaxNodeObjectBytes = 4 * 1024 * 1024;

class NodeWatcher {
 public:
  using Labels = std::map<std::string, std::string>;
  using Callback = std::function<void(const Labels&)>;  // called on the watcher's thread

  NodeWatcher(ApiServer api, std::string node_name);
  ~NodeWatcher();  // stop()
  NodeWatcher(const NodeWatcher&) = delete;
  NodeWatcher& operator=(const NodeWatcher&) = delete;

  // One GET of the Node (start-up, before the config is chosen); `timeout` bounds the whole
  // exchange. Ends at once with an error after stop().
  Result<NodeSnapshot> get_node(std::chrono::milliseconds timeout) const;
  // Starts the thread: watches from `from` (a GET's resourceVersion; empty: GET first) and calls
  // `on_labels` with the labels each time they differ from the last ones reported (`from`'s).
  void start(NodeSnapshot from, Callback on_labels);
  // Ends the request in flight and joins the thread; prompt whatever the API server does.
  void stop();

  // Timing of the watch loop; tests shorten it.
  using Timing = WatchTiming;
  void set_timing(const Timing& timing) { timing_ = timing; }

 private:
  void report(const Labels& labels);

  std::string node_name_;
  Interrupter interrupter_;
  ApiClient api_;
  Timing timing_;
  Callback on_labels_;
  Labels last_;
  std::thread thread_;
};

}  // namespace kgpu::kube
