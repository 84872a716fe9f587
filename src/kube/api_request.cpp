#include "kube/api_request.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <httplib.h>
#include <spdlog/spdlog.h>

#include <optional>
#include <thread>

#include "core/thread_name.h"
#include "kube/line_splitter.h"

namespace kgpu::kube {

// One request in flight: owns a duplicate of its socket (so shutting it down can never hit an fd
// number httplib closed and the process reused) and a watchdog thread that shuts the socket down
// at the deadline or on stop(). The watchdog sleeps without waking until one of those happens.
class ApiRequest {
 public:
  ApiRequest(Interrupter& interrupter, std::chrono::milliseconds deadline)
      : in_(interrupter), deadline_(std::chrono::steady_clock::now() + deadline) {
    {
      std::lock_guard lock(in_.mu_);
      in_.watchdogs_.insert(&cv_);
    }
    watchdog_ = std::thread([this] {
      name_this_thread("kgpu-api-dline");  // cuts an API request at its deadline
      watch();
    });
  }

  ~ApiRequest() {
    {
      std::lock_guard lock(in_.mu_);
      done_ = true;
      in_.watchdogs_.erase(&cv_);
    }
    cv_.notify_all();
    watchdog_.join();
    if (fd_ >= 0) ::close(fd_);
  }

  ApiRequest(const ApiRequest&) = delete;
  ApiRequest& operator=(const ApiRequest&) = delete;

  // httplib calls this with each socket it creates, before connecting it.
  void adopt(int sock) {
    std::lock_guard lock(in_.mu_);
    if (fd_ >= 0) ::close(fd_);  // an earlier address's socket, already closed by httplib
    fd_ = ::fcntl(sock, F_DUPFD_CLOEXEC, 0);
  }

  bool timed_out() const {
    std::lock_guard lock(in_.mu_);
    return timed_out_;
  }

 private:
  void watch() {
    std::unique_lock lock(in_.mu_);
    cv_.wait_until(lock, deadline_, [&] { return done_ || in_.stopped_; });
    // Stopped or past the deadline. shutdown() ends a blocked connect, TLS handshake or read at
    // once; it is repeated because httplib may not have connected the socket yet (shutdown of a
    // socket not yet connecting does nothing). This loop runs only until the request returns.
    while (!done_) {
      if (!in_.stopped_) timed_out_ = true;
      if (fd_ >= 0) ::shutdown(fd_, SHUT_RDWR);
      cv_.wait_for(lock, std::chrono::milliseconds(20), [&] { return done_; });
    }
  }

  Interrupter& in_;
  std::chrono::steady_clock::time_point deadline_;
  std::condition_variable cv_;  // waits with in_.mu_
  bool done_ = false;
  bool timed_out_ = false;
  int fd_ = -1;
  std::thread watchdog_;
};

Interrupter::~Interrupter() { stop(); }

void Interrupter::stop() {
  std::lock_guard lock(mu_);
  stopped_ = true;
  cv_.notify_all();
  for (auto* watchdog : watchdogs_) watchdog->notify_all();
}

bool Interrupter::stopped() const {
  std::lock_guard lock(mu_);
  return stopped_;
}

bool Interrupter::sleep_for(std::chrono::milliseconds delay) {
  std::unique_lock lock(mu_);
  cv_.wait_for(lock, delay, [&] { return stopped_; });
  return !stopped_;
}

namespace {

constexpr size_t kMaxErrorBody = 4096;

std::string seconds(std::chrono::milliseconds d) {
  return std::to_string(d.count() / 1000) + "." + std::to_string(d.count() % 1000 / 100) + " s";
}

const char* method_name(ApiMethod method) {
  switch (method) {
    case ApiMethod::Get: return "GET";
    case ApiMethod::Post: return "POST";
    case ApiMethod::Put: return "PUT";
    case ApiMethod::Delete: return "DELETE";
  }
  return "GET";
}

// What one request did: the status and httplib's error (Canceled when a receiver ended it on purpose).
struct Outcome {
  int status = 0;
  httplib::Error error = httplib::Error::Success;
};

// The request itself with the parts every request shares: the deadline's watchdog, stop(), the
// token and the CA. `refused` is set by the receivers when they refuse the body (it wins over the
// Canceled error that follows). `body` (JSON) goes out with POST / PUT / DELETE when not empty.
Result<Outcome> perform(const ApiServer& server, const std::string& token, Interrupter& interrupter,
                        ApiMethod method, const std::string& path, const std::string& body,
                        std::chrono::milliseconds deadline, const httplib::ResponseHandler& on_response,
                        const httplib::ContentReceiver& on_body, const std::optional<Error>& refused) {
  const std::string what = std::string(method_name(method)) + " " + server.base_url + path;
  if (interrupter.stopped()) return Error::unavailable(what + ": stopping");
  httplib::Client client(server.base_url);
  if (!client.is_valid()) return Error::invalid(what + ": not a usable API server URL");
  ApiRequest request(interrupter, deadline);
  // httplib's own timeouts only back up the watchdog (its read timeout restarts with each byte).
  client.set_connection_timeout(deadline);
  client.set_read_timeout(deadline);
  client.set_write_timeout(deadline);
  client.set_socket_options([&request](int sock) { request.adopt(sock); });
  client.set_follow_location(false);
  if (!token.empty()) client.set_bearer_token_auth(token);
  if (!server.ca_file.empty()) client.set_ca_cert_path(server.ca_file);
  Outcome outcome;
  httplib::Request req;
  req.method = method_name(method);
  req.path = path;
  req.headers = httplib::Headers{{"Accept", "application/json"}};
  if (!body.empty()) {
    req.body = body;
    req.set_header("Content-Type", "application/json");
  }
  req.response_handler = [&](const httplib::Response& r) {
    outcome.status = r.status;
    return on_response ? on_response(r) : true;
  };
  req.content_receiver = [&](const char* data, size_t length, uint64_t, uint64_t) { return on_body(data, length); };
  httplib::Response res;
  httplib::Error error = httplib::Error::Success;
  const auto started = std::chrono::steady_clock::now();
  const bool sent = client.send(req, res, error);
  if (interrupter.stopped()) return Error::unavailable(what + ": stopping");
  // httplib's own read timeout equals the deadline and may fire a moment before the watchdog: a
  // failure at the deadline is the deadline either way (not a "Read" error).
  const bool past_deadline = std::chrono::steady_clock::now() - started >= deadline;
  if (request.timed_out() || (!sent && error != httplib::Error::Canceled && past_deadline))
    return Error::unavailable(what + ": no complete answer within " + seconds(deadline));
  if (refused) return Error{refused->code, what + ": " + refused->message};
  outcome.error = sent ? httplib::Error::Success : error;
  if (outcome.error != httplib::Error::Success && outcome.error != httplib::Error::Canceled)
    return Error::unavailable(what + ": " + httplib::to_string(outcome.error));
  return outcome;
}

}  // namespace

ApiClient::ApiClient(ApiServer server, Interrupter& interrupter)
    : server_(std::move(server)), interrupter_(interrupter), token_(server_.token) {}

std::string ApiClient::bearer_token() const {
  std::lock_guard lock(token_mu_);
  if (server_.token_file.empty()) return token_;
  // Projected tokens rotate: read the file for every request (a few per watch period). When it
  // cannot be read, the last good token is used and the problem logged once.
  auto fresh = read_token_file(server_.token_file);
  if (fresh) {
    token_ = std::move(*fresh);
    token_problem_.clear();
  } else if (fresh.error().message != token_problem_) {
    token_problem_ = fresh.error().message;
    spdlog::warn("API server token: {}; using the token read before", token_problem_);
  }
  return token_;
}

Result<ApiAnswer> ApiClient::get(const std::string& path, std::chrono::milliseconds deadline, size_t max_body) const {
  return request(ApiMethod::Get, path, "", deadline, max_body);
}

Result<ApiAnswer> ApiClient::request(ApiMethod method, const std::string& path, const std::string& body,
                                     std::chrono::milliseconds deadline, size_t max_body) const {
  ApiAnswer answer;
  std::optional<Error> refused;
  auto on_body = [&](const char* data, size_t length) {
    if (answer.body.size() + length > max_body) {
      refused = Error::invalid("the answer is larger than " + std::to_string(max_body) + " bytes");
      return false;
    }
    answer.body.append(data, length);
    return true;
  };
  auto outcome =
      perform(server_, bearer_token(), interrupter_, method, path, body, deadline, nullptr, on_body, refused);
  if (!outcome) return outcome.error();
  if (outcome->error != httplib::Error::Success)
    return Error::unavailable(std::string(method_name(method)) + " " + server_.base_url + path + ": " +
                              httplib::to_string(outcome->error));
  answer.status = outcome->status;
  return answer;
}

Result<ApiAnswer> ApiClient::stream_lines(const std::string& path, std::chrono::milliseconds deadline,
                                          size_t max_line,
                                          const std::function<bool(std::string_view)>& on_line) const {
  ApiAnswer answer;
  LineSplitter splitter(max_line);
  bool streaming = false;
  std::optional<Error> refused;
  auto on_response = [&](const httplib::Response& r) {
    streaming = r.status == 200;
    return true;
  };
  auto on_body = [&](const char* data, size_t length) {
    if (!streaming) {  // an error Status: its start is enough for the message
      answer.body.append(data, std::min(length, kMaxErrorBody - answer.body.size()));
      return answer.body.size() < kMaxErrorBody;
    }
    auto more = splitter.feed(std::string_view(data, length), on_line);
    if (!more) {
      refused = more.error();
      return false;
    }
    return *more;
  };
  // A Canceled outcome here is a receiver ending the exchange on purpose (on_line said stop, or
  // the error body was long enough); every real failure came back as an Error.
  auto outcome = perform(server_, bearer_token(), interrupter_, ApiMethod::Get, path, "", deadline, on_response,
                         on_body, refused);
  if (!outcome) return outcome.error();
  answer.status = outcome->status;
  return answer;
}

}  // namespace kgpu::kube
