#pragma once
// A stand-in for the Kubernetes API server, just enough for kgpu's NodeWatcher: GET one Node and a
// watch of it (chunked stream of JSON lines). Plain HTTP on 127.0.0.1, ephemeral port. set_labels()
// bumps the resourceVersion and pushes a MODIFIED event to every open watch.
#include <httplib.h>

#include <condition_variable>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace kgpu::test {

class FakeApiServer {
 public:
  FakeApiServer(std::string node_name, std::map<std::string, std::string> labels)
      : node_(std::move(node_name)), labels_(std::move(labels)) {
    server_.Get("/api/v1/nodes/" + node_, [this](const httplib::Request&, httplib::Response& res) {
      std::lock_guard lock(mu_);
      ++gets_;
      res.set_content(node_json().dump(), "application/json");
    });
    server_.Get("/api/v1/nodes", [this](const httplib::Request& req, httplib::Response& res) {
      if (req.get_param_value("watch") != "1") {
        res.status = 400;
        return;
      }
      size_t from = req.has_param("resourceVersion") ? std::stoul(req.get_param_value("resourceVersion")) : 0;
      {
        std::lock_guard lock(mu_);
        ++watches_;
      }
      cv_.notify_all();
      auto cursor = std::make_shared<size_t>(from);  // the newest resource version this stream has sent
      res.set_chunked_content_provider("application/json", [this, cursor](size_t, httplib::DataSink& sink) {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stopping_ || events_.size() > first_after(*cursor); });
        if (stopping_) {
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
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    // bind_to_any_port already listens: connections queue until the accept loop runs.
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

  int watches_opened() const {
    std::lock_guard lock(mu_);
    return watches_;
  }
  int gets() const {
    std::lock_guard lock(mu_);
    return gets_;
  }
  // Blocks until a watch is open (or the timeout passes).
  bool wait_watching(std::chrono::milliseconds timeout) {
    std::unique_lock lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return watches_ > 0; });
  }

 private:
  // Index of the first event newer than resource version `version` (mu_ held).
  size_t first_after(size_t version) const {
    size_t i = 0;
    while (i < events_.size() && events_[i].first <= version) ++i;
    return i;
  }
  nlohmann::json node_json() const {
    return {{"kind", "Node"},
            {"apiVersion", "v1"},
            {"metadata", {{"name", node_}, {"resourceVersion", std::to_string(resource_version_)}, {"labels", labels_}}}};
  }

  std::string node_;
  std::map<std::string, std::string> labels_;
  size_t resource_version_ = 1;
  std::vector<std::pair<size_t, std::string>> events_;
  bool stopping_ = false;
  int watches_ = 0, gets_ = 0;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace kgpu::test
