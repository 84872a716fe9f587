#include "kube/node_watcher.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <exception>

#include "core/thread_name.h"

namespace kgpu::kube {
namespace {

std::string node_path(const std::string& node) { return "/api/v1/nodes/" + node; }

std::string watch_path(const std::string& node, const std::string& resource_version, std::chrono::seconds length) {
  std::string path = "/api/v1/nodes?watch=1&allowWatchBookmarks=true&timeoutSeconds=" +
                     std::to_string(length.count()) + "&fieldSelector=metadata.name%3D" + node;
  if (!resource_version.empty()) path += "&resourceVersion=" + resource_version;
  return path;
}

std::string status_hint(int status) {
  if (status == 401) return " (the service-account token was refused: expired or revoked?)";
  if (status == 403) return " (RBAC: the service account needs get/watch on nodes)";
  return "";
}

// The start of an error answer, on one line, for the log.
std::string excerpt(const std::string& body) {
  std::string out = body.substr(0, 200);
  std::replace_if(out.begin(), out.end(), [](char c) { return c == '\n' || c == '\r'; }, ' ');
  return out.empty() ? out : ": " + out;
}

}  // namespace

NodeWatcher::NodeWatcher(ApiServer api, std::string node_name)
    : node_name_(std::move(node_name)), api_(std::move(api), interrupter_) {}

NodeWatcher::~NodeWatcher() { stop(); }

Result<NodeSnapshot> NodeWatcher::get_node(std::chrono::milliseconds timeout) const {
  auto answer = api_.get(node_path(node_name_), timeout, kMaxNodeObjectBytes);
  if (!answer) return answer.error();
  if (answer->status != 200)
    return Error::unavailable("GET " + node_path(node_name_) + ": HTTP " + std::to_string(answer->status) +
                              status_hint(answer->status) + excerpt(answer->body));
  auto node = parse_node(answer->body);
  if (!node) return Error{node.error().code, "GET " + node_path(node_name_) + ": " + node.error().message};
  return node;
}

void NodeWatcher::start(NodeSnapshot from, Callback on_labels) {
  on_labels_ = std::move(on_labels);
  last_ = from.labels;
  thread_ = std::thread([this, from = std::move(from)] {
    name_this_thread("kgpu-node-watch");  // watches the Node object for the config label
    run(from);
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

void NodeWatcher::run(NodeSnapshot from) {
  std::string rv = from.resource_version;
  std::chrono::milliseconds backoff = timing_.first_backoff;
  std::string logged_problem;  // the problem last logged; empty while watching normally
  while (!interrupter_.stopped()) {
    std::optional<std::string> problem;
    bool progressed = false;
    // Thread entry: nothing may escape (a throwing callback would std::terminate the daemon).
    try {
      if (rv.empty()) {
        auto node = get_node(timing_.get_deadline);
        if (node) {
          rv = node->resource_version;
          report(node->labels);
        } else {
          problem = node.error().message;
        }
      }
      if (!problem) {
        auto watched = watch_once(rv);
        problem = std::move(watched.problem);
        progressed = watched.progressed;
        if (!problem && !progressed)
          problem = "the API server ended the watch of Node " + node_name_ + " without sending anything";
      }
    } catch (const std::exception& e) {
      problem = std::string("unexpected failure: ") + e.what();
      rv.clear();
    } catch (...) {
      problem = "unexpected failure";
      rv.clear();
    }
    if (interrupter_.stopped()) return;
    if (!problem) {
      if (!logged_problem.empty()) spdlog::info("node labels: watching Node {} again", node_name_);
      logged_problem.clear();
      backoff = timing_.first_backoff;
      continue;
    }
    if (*problem != logged_problem) {
      spdlog::warn("node labels: {}; retrying with backoff", *problem);
      logged_problem = *problem;
    }
    if (progressed) backoff = timing_.first_backoff;
    if (!interrupter_.sleep_for(backoff)) return;
    backoff = std::min(backoff * 2, timing_.max_backoff);
  }
}

NodeWatcher::WatchResult NodeWatcher::watch_once(std::string& resource_version) {
  WatchResult result;
  const auto started = std::chrono::steady_clock::now();
  const std::string path = watch_path(node_name_, resource_version, timing_.watch_seconds);
  // The deadline leaves the server time to end the watch itself first.
  const auto deadline = std::chrono::duration_cast<std::chrono::milliseconds>(timing_.watch_seconds) +
                        std::chrono::seconds(30);
  auto answer = api_.stream_lines(path, deadline, kMaxNodeObjectBytes, [&](std::string_view line) {
    auto event = parse_watch_event(line);
    if (!event) {
      // The event might have been the label change: start again from a GET rather than skip it.
      result.problem = "watch of Node " + node_name_ + ": " + event.error().message;
      resource_version.clear();
      return false;
    }
    if (event->type == "ERROR") {
      // 410 Gone: our resourceVersion is too old. Either way a fresh GET is the way back.
      resource_version.clear();
      if (event->error_code != 410)
        result.problem = "watch of Node " + node_name_ + ": ERROR event (code " + std::to_string(event->error_code) + ")";
      else
        result.progressed = result.progressed || std::chrono::steady_clock::now() - started >= timing_.min_quiet_watch;
      return false;
    }
    result.progressed = true;
    if (!event->node.resource_version.empty()) resource_version = event->node.resource_version;
    if (event->type == "ADDED" || event->type == "MODIFIED") report(event->node.labels);
    return true;
  });
  if (!answer) {
    if (!result.problem) result.problem = "watch of Node " + node_name_ + ": " + answer.error().message;
    return result;
  }
  if (answer->status != 200) {
    if (answer->status == 410) resource_version.clear();
    result.problem = "watch of Node " + node_name_ + ": HTTP " + std::to_string(answer->status) +
                     status_hint(answer->status) + excerpt(answer->body);
    return result;
  }
  if (std::chrono::steady_clock::now() - started >= timing_.min_quiet_watch) result.progressed = true;
  if (!result.progressed && !result.problem && resource_version.empty())
    result.problem = "watch of Node " + node_name_ + ": 410 Gone at once";
  return result;
}

}  // namespace kgpu::kube
