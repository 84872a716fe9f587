#include "kube/api_request.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "http/client.h"
#include "kube/line_splitter.h"

namespace kgpu::kube {

Interrupter::Interrupter() {
  auto canceller = http::Canceller::create();
  if (canceller)
    canceller_ = std::move(*canceller);
  else
    canceller_problem_ = canceller.error().message;
}

Interrupter::~Interrupter() { stop(); }

void Interrupter::stop() {
  std::lock_guard lock(mu_);
  stopped_ = true;
  cv_.notify_all();
  // After stopped_ is set: a request that sees the cancellation also sees stopped() (its "stopping").
  if (canceller_) canceller_->cancel();
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

Result<const http::Canceller*> Interrupter::canceller() const {
  if (!canceller_) return Error::internal("cannot make the request stoppable: " + canceller_problem_);
  return &*canceller_;
}

namespace {

constexpr size_t kMaxErrorBody = 4096;
// A watch's answer other than 2xx is a Status object of well under 1 KiB; up to this much of it is
// read, so that its status still comes back (with its first kMaxErrorBody bytes). Past it: an error.
constexpr size_t kMaxStreamErrorRead = 64 * 1024;

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

// What every request shares besides its own fields: where it goes, how it is stopped, its deadline.
struct Route {
  const Result<http::Url>& url;
  const std::string& base_url;  // as configured, for naming the request when it is no usable URL
  const Interrupter& interrupter;
  Result<const http::Canceller*> canceller;
};

// Sends `r` (method, target, headers, body, limits and callbacks filled in) and turns every way it
// can end short of an answer into an Error naming the request: stop() ("stopping"), the deadline
// ("no complete answer within"), `refused` (set by a streaming callback that refused the body), or
// what the HTTP client reported.
Result<http::Response> send(http::Request r, const Route& route, std::chrono::milliseconds deadline,
                            const std::optional<Error>& refused) {
  const std::string what = r.method + " " + (route.url ? route.url->to_string() : route.base_url) + r.target;
  if (!route.url)
    return Error{route.url.error().code, what + ": not a usable API server URL: " + route.url.error().message};
  if (route.interrupter.stopped()) return Error::unavailable(what + ": stopping");
  if (!route.canceller) return Error{route.canceller.error().code, what + ": " + route.canceller.error().message};
  r.url = *route.url;
  r.canceller = *route.canceller;
  r.deadline = std::chrono::steady_clock::now() + deadline;
  auto response = http::request(r);
  if (route.interrupter.stopped()) return Error::unavailable(what + ": stopping");
  if (refused) return Error{refused->code, what + ": " + refused->message};
  if (!response && std::chrono::steady_clock::now() >= r.deadline)
    return Error::unavailable(what + ": no complete answer within " + seconds(deadline));
  return response;
}

}  // namespace

ApiClient::ApiClient(ApiServer server, Interrupter& interrupter)
    : server_(std::move(server)), url_(http::parse_url(server_.base_url)), interrupter_(interrupter),
      token_(server_.token) {}

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
  http::Request r;
  r.method = method_name(method);
  r.target = path;
  r.headers = {{"Accept", "application/json"}};
  if (!body.empty()) {
    r.body = body;
    r.headers.emplace_back("Content-Type", "application/json");
  }
  r.max_body = max_body;
  r.ca_file = server_.ca_file;
  r.bearer_token = bearer_token();
  auto response = send(std::move(r), Route{url_, server_.base_url, interrupter_, interrupter_.canceller()}, deadline,
                       std::nullopt);
  if (!response) return response.error();
  return ApiAnswer{response->status, std::move(response->body)};
}

Result<ApiAnswer> ApiClient::patch(const std::string& path, const std::string& body, const std::string& content_type,
                                   std::chrono::milliseconds deadline, size_t max_body) const {
  http::Request r;
  r.method = "PATCH";
  r.target = path;
  r.headers = {{"Accept", "application/json"}, {"Content-Type", content_type}};
  r.body = body;
  r.max_body = max_body;
  r.ca_file = server_.ca_file;
  r.bearer_token = bearer_token();
  auto response = send(std::move(r), Route{url_, server_.base_url, interrupter_, interrupter_.canceller()}, deadline,
                       std::nullopt);
  if (!response) return response.error();
  return ApiAnswer{response->status, std::move(response->body)};
}

Result<ApiAnswer> ApiClient::stream_lines(const std::string& path, std::chrono::milliseconds deadline,
                                          size_t max_line,
                                          const std::function<bool(std::string_view)>& on_line) const {
  LineSplitter splitter(max_line);
  std::optional<Error> refused;
  http::Request r;
  r.target = path;
  r.headers = {{"Accept", "application/json"}};
  r.ca_file = server_.ca_file;
  r.bearer_token = bearer_token();
  // A 2xx answer's bytes go through the splitter (it bounds each line); any other status's body is
  // collected under max_body and cut to its start below.
  r.max_body = kMaxStreamErrorRead;
  r.on_chunk = [&](std::string_view bytes) {
    auto more = splitter.feed(bytes, on_line);
    if (!more) {
      refused = more.error();
      return false;
    }
    return *more;
  };
  auto response =
      send(std::move(r), Route{url_, server_.base_url, interrupter_, interrupter_.canceller()}, deadline, refused);
  if (!response) return response.error();
  ApiAnswer answer{response->status, std::move(response->body)};
  answer.body.resize(std::min(answer.body.size(), kMaxErrorBody));
  return answer;
}

}  // namespace kgpu::kube
