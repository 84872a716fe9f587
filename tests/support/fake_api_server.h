#pragma once
// A stand-in for the Kubernetes API server, just enough for kgpu's NodeWatcher: GET one Node and a
// watch of it (chunked stream of JSON lines). Plain HTTP on 127.0.0.1 (an ephemeral port, or a
// given one so a test can start it after the client first found nothing listening). set_labels()
// bumps the resourceVersion and pushes a MODIFIED event to every open watch. set_fault() makes
// every later request misbehave the way a broken or overloaded API server does.
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
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
    if (port == 0) {
      port_ = server_.bind_to_any_port("127.0.0.1");
    } else {
      port_ = server_.bind_to_port("127.0.0.1", port) ? port : -1;
    }
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
  Fault fault_ = Fault::None;
  std::string token_;
  std::vector<std::string> tokens_seen_;
  int watches_ = 0, gets_ = 0, requests_ = 0;
  size_t endless_sent_ = 0;
  int epoch_ = 0;  // end_watches() count
  mutable std::mutex mu_;
  std::condition_variable cv_;
  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
};

}  // namespace kgpu::test
