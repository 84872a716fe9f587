#pragma once
// kgpu's HTTP/1.1 client for the API server: one blocking request per call over a fresh connection
// (`Connection: close`; a watch is one long request anyway), plain or TLS (OpenSSL, linked
// statically so loading kgpu costs nothing until the first HTTPS request). One deadline bounds the
// whole exchange (connect, TLS handshake, sending, headers, body), and a Canceller ends it at once
// from another thread. No thread or timer of its own.
#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/result.h"
#include "http/canceller.h"
#include "http/message.h"
#include "http/url.h"

namespace kgpu::http {

struct Request {
  std::string method = "GET";
  Url url;                  // the server; its base_path goes before `target`
  std::string target = "/";  // path and query, starting with '/'
  // Extra header lines (Host, Connection, Content-Length and Authorization are written here).
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;  // sent with a Content-Length (also 0 for POST, PUT and PATCH)
  std::chrono::steady_clock::time_point deadline;  // for the whole exchange; required
  // Largest body collected into Response::body; with on_line, the largest line. Past it: an Error.
  size_t max_body = 16 * 1024 * 1024;
  // Streaming (at most one of the two), for a 2xx answer only (another status's body is collected
  // as usual): on_chunk gets the body's bytes as they arrive, on_line each non-empty
  // newline-ended line without its '\n' (a watch); false ends the request there (Response::stopped).
  std::function<bool(std::string_view)> on_chunk;
  std::function<bool(std::string_view)> on_line;
  std::string ca_file;       // https: verify the server against this PEM file; empty: the system's CAs
  std::string bearer_token;  // non-empty: "Authorization: Bearer <token>"
  const Canceller* canceller = nullptr;
};

struct Response {
  int status = 0;
  Headers headers;   // lower-case names
  std::string body;  // empty when streamed
  bool stopped = false;  // a streaming callback ended the request before the answer's end
};

// Any HTTP status is a Response. Errors (code Unavailable unless the Request itself is invalid:
// InvalidArgument) say which request and which phase: a bad URL or header, DNS, connect, TLS
// (a failed certificate verification is named as such), the deadline, cancellation, a malformed
// or truncated answer, a body over max_body.
Result<Response> request(const Request& request);

// The bytes of the request head and body (pure; validates method, target and headers).
Result<std::string> serialize_request(const Request& request);

}  // namespace kgpu::http
