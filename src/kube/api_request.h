#pragma once
// Bounded, interruptible requests to the API server, over kgpu's own HTTP client (src/http). Each
// request has one deadline for the whole exchange (connect, TLS, headers and body) and a size
// limit, so a server that drips bytes or stalls cannot hold the caller. Interrupter::stop() ends a
// request in flight at once from any thread, in any phase (connect included): every request polls
// the Interrupter's eventfd next to its socket, so shutdown never waits on the network, and no
// thread or timer exists for it.
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "http/canceller.h"
#include "http/url.h"
#include "kube/api_server.h"

namespace kgpu::kube {

// Ends the request in flight (and refuses later ones) once stop() is called; also the stoppable
// sleep for backoff. Shared by every request of one owner (the node watcher, the slice publisher).
class Interrupter {
 public:
  Interrupter();
  ~Interrupter();
  Interrupter(const Interrupter&) = delete;
  Interrupter& operator=(const Interrupter&) = delete;

  void stop();
  bool stopped() const;
  // Waits up to `delay`; false when stop() was called (returns at once then).
  bool sleep_for(std::chrono::milliseconds delay);

 private:
  friend class ApiClient;
  // What requests poll to be cancelled; an Error when none could be made (no eventfd left), and
  // then requests are refused rather than sent beyond stop()'s reach.
  Result<const http::Canceller*> canceller() const;

  mutable std::mutex mu_;
  std::condition_variable cv_;  // sleep_for's wait
  bool stopped_ = false;
  std::optional<http::Canceller> canceller_;
  std::string canceller_problem_;  // why canceller_ is empty
};

struct ApiAnswer {
  int status = 0;
  std::string body;  // at most the request's size limit
};

enum class ApiMethod { Get, Post, Put, Delete };

class ApiClient {
 public:
  ApiClient(ApiServer server, Interrupter& interrupter);

  // GET `path`; an answer larger than `max_body` bytes, a connection failure, the deadline or
  // stop() are errors. Any HTTP status is an answer.
  Result<ApiAnswer> get(const std::string& path, std::chrono::milliseconds deadline, size_t max_body) const;

  // Any method with a JSON `body` (sent with Content-Type application/json when not empty), under
  // the same rules as get(): deadline for the whole exchange, `max_body` for the answer, stop().
  Result<ApiAnswer> request(ApiMethod method, const std::string& path, const std::string& body,
                            std::chrono::milliseconds deadline, size_t max_body) const;
  Result<ApiAnswer> post(const std::string& path, const std::string& body, std::chrono::milliseconds deadline,
                         size_t max_body) const {
    return request(ApiMethod::Post, path, body, deadline, max_body);
  }
  Result<ApiAnswer> put(const std::string& path, const std::string& body, std::chrono::milliseconds deadline,
                        size_t max_body) const {
    return request(ApiMethod::Put, path, body, deadline, max_body);
  }
  // DELETE; `body` may carry DeleteOptions (preconditions) or be empty.
  Result<ApiAnswer> remove(const std::string& path, const std::string& body, std::chrono::milliseconds deadline,
                           size_t max_body) const {
    return request(ApiMethod::Delete, path, body, deadline, max_body);
  }

  // PATCH `path` with `body` sent as `content_type` (application/json-patch+json,
  // application/merge-patch+json, ...), under the same rules as request().
  Result<ApiAnswer> patch(const std::string& path, const std::string& body, const std::string& content_type,
                          std::chrono::milliseconds deadline, size_t max_body) const;

  // GET `path` as a stream of newline-delimited lines (a watch). A 2xx answer's lines go to
  // `on_line` (false: end the stream here); another status's body (at most 4 KiB) comes back in
  // the answer. Ends without error when the server ends the stream or `on_line` says so; a line
  // over `max_line` bytes, a broken connection, the deadline or stop() are errors.
  Result<ApiAnswer> stream_lines(const std::string& path, std::chrono::milliseconds deadline, size_t max_line,
                                 const std::function<bool(std::string_view)>& on_line) const;

  const std::string& base_url() const { return server_.base_url; }

 private:
  std::string bearer_token() const;

  ApiServer server_;
  Result<http::Url> url_;  // server_.base_url parsed once; an Error refuses every request
  Interrupter& interrupter_;
  mutable std::mutex token_mu_;
  mutable std::string token_;            // the last token read successfully
  mutable std::string token_problem_;    // the last re-read failure logged (logged once per change)
};

}  // namespace kgpu::kube
