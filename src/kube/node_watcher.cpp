#include "kube/node_watcher.h"

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <algorithm>

namespace kgpu::kube {
namespace {

constexpr int kWatchSeconds = 300;  // the server ends each watch after this; we reconnect at once

std::string node_path(const std::string& node) { return "/api/v1/nodes/" + node; }

std::string watch_path(const std::string& node, const std::string& resource_version) {
  std::string path = "/api/v1/nodes?watch=1&allowWatchBookmarks=true&timeoutSeconds=" +
                     std::to_string(kWatchSeconds) + "&fieldSelector=metadata.name%3D" + node;
  if (!resource_version.empty()) path += "&resourceVersion=" + resource_version;
  return path;
}

}  // namespace

NodeWatcher::NodeWatcher(ApiServer api, std::string node_name) : api_(std::move(api)), node_name_(std::move(node_name)) {}

NodeWatcher::~NodeWatcher() { stop(); }

std::unique_ptr<httplib::Client> NodeWatcher::client(std::chrono::seconds read_timeout) const {
  auto c = std::make_unique<httplib::Client>(api_.base_url);
  c->set_connection_timeout(std::chrono::seconds(5));
  c->set_read_timeout(read_timeout);
  if (!api_.token.empty()) c->set_bearer_token_auth(api_.token);
  if (!api_.ca_file.empty()) c->set_ca_cert_path(api_.ca_file);
  return c;
}

Result<NodeSnapshot> NodeWatcher::get_node(std::chrono::milliseconds timeout) const {
  auto c = client(std::chrono::duration_cast<std::chrono::seconds>(timeout) + std::chrono::seconds(1));
  c->set_connection_timeout(std::chrono::duration_cast<std::chrono::seconds>(timeout) + std::chrono::seconds(1));
  auto res = c->Get(node_path(node_name_));
  if (!res) return Error::unavailable("GET " + api_.base_url + node_path(node_name_) + ": " + httplib::to_string(res.error()));
  if (res->status != 200)
    return Error::unavailable("GET " + node_path(node_name_) + ": HTTP " + std::to_string(res->status) +
                              (res->status == 403 ? " (RBAC: the service account needs get/watch on nodes)" : ""));
  return parse_node(res->body);
}

void NodeWatcher::start(NodeSnapshot from, Callback on_labels) {
  on_labels_ = std::move(on_labels);
  last_ = from.labels;
  thread_ = std::thread([this, from = std::move(from)] { run(from); });
}

void NodeWatcher::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
    if (active_) active_->stop();
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool NodeWatcher::wait_backoff(std::chrono::milliseconds delay) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, delay, [&] { return stopping_; });
  return !stopping_;
}

void NodeWatcher::report(const Labels& labels) {
  if (labels == last_) return;
  last_ = labels;
  on_labels_(labels);
}

void NodeWatcher::run(NodeSnapshot from) {
  std::string rv = from.resource_version;
  std::chrono::milliseconds backoff(1000);
  bool failing = false;
  while (true) {
    {
      std::lock_guard lock(mu_);
      if (stopping_) return;
    }
    bool ok = true;
    if (rv.empty()) {
      auto node = get_node(std::chrono::seconds(10));
      if (node) {
        rv = node->resource_version;
        report(node->labels);
      } else {
        ok = false;
        if (!failing) spdlog::warn("node labels: {}; retrying with backoff", node.error().message);
      }
    }
    if (ok) ok = watch_once(rv);
    if (ok) {
      if (failing) spdlog::info("node labels: watching Node {} again", node_name_);
      failing = false;
      backoff = std::chrono::milliseconds(1000);
      continue;
    }
    failing = true;
    if (!wait_backoff(backoff)) return;
    backoff = std::min(backoff * 2, std::chrono::milliseconds(30000));
  }
}

bool NodeWatcher::watch_once(std::string& resource_version) {
  auto c = client(std::chrono::seconds(kWatchSeconds + 30));
  {
    std::lock_guard lock(mu_);
    if (stopping_) return true;
    active_ = c.get();
  }
  std::string pending;
  bool restart = false;
  auto res = c->Get(watch_path(node_name_, resource_version), [&](const char* data, size_t length) {
    pending.append(data, length);
    for (size_t nl; (nl = pending.find('\n')) != std::string::npos;) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (line.empty()) continue;
      auto event = parse_watch_event(line);
      if (!event) {
        spdlog::warn("node labels: {}", event.error().message);
        continue;
      }
      if (event->type == "ERROR") {
        restart = true;  // typically 410 Gone: start again from a fresh GET
        return false;
      }
      if (!event->node.resource_version.empty()) resource_version = event->node.resource_version;
      if (event->type == "ADDED" || event->type == "MODIFIED") report(event->node.labels);
    }
    std::lock_guard lock(mu_);
    return !stopping_;
  });
  {
    std::lock_guard lock(mu_);
    active_ = nullptr;
    if (stopping_) return true;
  }
  if (restart) {
    resource_version.clear();
    return true;
  }
  if (!res) {
    if (res.error() == httplib::Error::Canceled) return true;  // we ended it (stopping)
    spdlog::warn("node labels: watch of Node {}: {}", node_name_, httplib::to_string(res.error()));
    return false;
  }
  if (res->status != 200) {
    spdlog::warn("node labels: watch of Node {}: HTTP {}", node_name_, res->status);
    return false;
  }
  return true;
}

}  // namespace kgpu::kube
