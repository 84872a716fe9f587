#include "kube/node_watcher.h"

#include "core/thread_name.h"

namespace kgpu::kube {
namespace {

constexpr const char* kRbac = "get/watch on nodes";

std::string node_path(const std::string& node) { return "/api/v1/nodes/" + node; }

}  // namespace

NodeWatcher::NodeWatcher(ApiServer api, std::string node_name)
    : node_name_(std::move(node_name)), api_(std::move(api), interrupter_) {}

NodeWatcher::~NodeWatcher() { stop(); }

Result<NodeSnapshot> NodeWatcher::get_node(std::chrono::milliseconds timeout) const {
  auto answer = api_.get(node_path(node_name_), timeout, kMaxNodeObjectBytes);
  if (!answer) return answer.error();
  if (answer->status != 200) return Error::unavailable(api_status_problem("GET " + node_path(node_name_), *answer, kRbac));
  auto node = parse_node(answer->body);
  if (!node) return Error{node.error().code, "GET " + node_path(node_name_) + ": " + node.error().message};
  return node;
}

void NodeWatcher::start(NodeSnapshot from, Callback on_labels) {
  on_labels_ = std::move(on_labels);
  last_ = from.labels;
  thread_ = std::thread([this, rv = from.resource_version] {
    name_this_thread("kgpu-node-watch");  // watches the Node object for the config label
    WatchTarget target{"Node " + node_name_, "node labels", node_path(node_name_),
                       "/api/v1/nodes?fieldSelector=metadata.name%3D" + node_name_, kRbac, kMaxNodeObjectBytes};
    WatchHandlers handlers;
    handlers.on_get = [this](const std::string& body) -> Result<std::string> {
      auto node = parse_node(body);
      if (!node) return node.error();
      report(node->labels);
      return node->resource_version;
    };
    handlers.on_event = [this](std::string_view line) -> Result<WatchEventHead> {
      auto event = parse_watch_event(line);
      if (!event) return event.error();
      if (event->type == "ADDED" || event->type == "MODIFIED") report(event->node.labels);
      return WatchEventHead{event->type, event->node.resource_version, event->error_code};
    };
    WatchLoop(api_, interrupter_, std::move(target), std::move(handlers), timing_).run(rv);
  });
}

void NodeWatcher::stop() {
  interrupter_.stop();
  if (thread_.joinable()) thread_.join();
}

void NodeWatcher::report(const Labels& labels) {
  if (labels == last_) return;
  last_ = labels;
  on_labels_(labels);
}

}  // namespace kgpu::kube
