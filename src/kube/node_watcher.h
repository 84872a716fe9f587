#pragma once
// NodeWatcher: follows this node's Node object through the API server (GET, then a watch stream
// filtered to the one Node) and reports its labels whenever they change. One thread, which sleeps
// in the watch's read (the server sends events; no polling). Connection errors are retried with
// backoff (1 s doubling to 30 s) and logged once per state change; a 410 Gone restarts from a GET.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "core/result.h"
#include "kube/api_server.h"
#include "kube/node_object.h"

namespace httplib {
class Client;
}

namespace kgpu::kube {

class NodeWatcher {
 public:
  using Labels = std::map<std::string, std::string>;
  using Callback = std::function<void(const Labels&)>;  // called on the watcher's thread

  NodeWatcher(ApiServer api, std::string node_name);
  ~NodeWatcher();  // stop()
  NodeWatcher(const NodeWatcher&) = delete;
  NodeWatcher& operator=(const NodeWatcher&) = delete;

  // One GET of the Node (start-up, before the config is chosen).
  Result<NodeSnapshot> get_node(std::chrono::milliseconds timeout) const;
  // Starts the thread: watches from `from` (a GET's resourceVersion; empty: GET first) and calls
  // `on_labels` with the labels each time they differ from the last ones reported (`from`'s).
  void start(NodeSnapshot from, Callback on_labels);
  void stop();

 private:
  void run(NodeSnapshot from);
  bool watch_once(std::string& resource_version);  // false: connection error
  bool wait_backoff(std::chrono::milliseconds delay);  // false: stopping
  std::unique_ptr<httplib::Client> client(std::chrono::seconds read_timeout) const;
  void report(const Labels& labels);

  ApiServer api_;
  std::string node_name_;
  Callback on_labels_;
  Labels last_;
  std::thread thread_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  httplib::Client* active_ = nullptr;  // the client blocked in a watch, for stop()
};

}  // namespace kgpu::kube
