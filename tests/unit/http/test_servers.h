#pragma once
// Servers for the HTTP client tests: cpp-httplib's (plain and TLS) on a loopback port with the
// handlers the tests share, and a listener that never answers (the kernel completes the TCP
// handshake from its backlog; nobody reads or writes).
#include <httplib.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "core/unique_fd.h"
#include "http/client.h"

namespace kgpu::http::test {

// Registers /length, /chunked, /lines (an endless watch-like stream), /big, /echo, /headers.
inline void add_handlers(httplib::Server& server) {
  server.Get("/length", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("hello world", "text/plain");
  });
  server.Get("/chunked", [](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("text/plain", [](size_t offset, httplib::DataSink& sink) {
      if (offset >= 3 * 5) {
        sink.done();
        return true;
      }
      sink.write("part-", 5);  // three chunks of five bytes
      return true;
    });
  });
  server.Get("/lines", [](const httplib::Request&, httplib::Response& res) {
    res.set_chunked_content_provider("application/json", [](size_t offset, httplib::DataSink& sink) {
      // Lines split across chunks: "{"n":0}\n" goes out in two pieces.
      const std::string line = "{\"n\":" + std::to_string(offset) + "}\n";
      sink.write(line.data(), 4);
      sink.write(line.data() + 4, line.size() - 4);
      return sink.is_writable();  // until the client goes away
    });
  });
  server.Get("/big", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(1 << 20, 'b'), "application/octet-stream");
  });
  server.Get("/status", [](const httplib::Request&, httplib::Response& res) {
    res.status = 403;
    res.set_content("{\"reason\":\"Forbidden\"}", "application/json");
  });
  server.Post("/echo", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(req.body, "application/json");
  });
  server.Get("/headers", [](const httplib::Request& req, httplib::Response& res) {
    res.set_content(req.get_header_value("Authorization") + "|" + req.get_header_value("Accept") + "|" +
                        req.get_header_value("Host"),
                    "text/plain");
  });
}

// Runs `server` on 127.0.0.1 until destroyed.
class Running {
 public:
  explicit Running(httplib::Server& server) : server_(server) {
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::yield();
  }
  ~Running() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }

 private:
  httplib::Server& server_;
  int port_ = -1;
  std::thread thread_;
};

// A listening socket that never accepts: connects succeed, and then nothing ever arrives.
class SilentListener {
 public:
  explicit SilentListener(int backlog = 16) : fd_(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof addr;
    ::bind(fd_.get(), reinterpret_cast<sockaddr*>(&addr), len);
    ::listen(fd_.get(), backlog);
    ::getsockname(fd_.get(), reinterpret_cast<sockaddr*>(&addr), &len);
    port_ = ntohs(addr.sin_port);
  }
  int port() const { return port_; }
  int fd() const { return fd_.get(); }

 private:
  UniqueFd fd_;
  int port_ = 0;
};

// A listener whose accept queue is full: the kernel drops further SYNs, so a connect to it hangs
// (the connect phase of a request, for the deadline and cancel tests).
class FullListener {
 public:
  FullListener() : listener_(0) {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(listener_.port()));
    // A backlog of 0 holds one connection; a few more make sure the queue is full.
    for (auto& fd : fillers_) {
      fd.reset(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
      ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr);
    }
  }
  int port() const { return listener_.port(); }

 private:
  SilentListener listener_;
  UniqueFd fillers_[3];
};

// A port nothing listens on (bound once, then closed).
inline int closed_port() {
  SilentListener listener;
  return listener.port();
}

inline Request get(const std::string& base, const std::string& target,
                   std::chrono::milliseconds deadline = std::chrono::seconds(10)) {
  Request r;
  r.url = *parse_url(base);
  r.target = target;
  r.deadline = std::chrono::steady_clock::now() + deadline;
  return r;
}

}  // namespace kgpu::http::test
