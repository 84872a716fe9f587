#pragma once
// The little HTTP/1.x the metrics endpoint needs, as pure functions: find the end of a request's
// head, read its request line, and build a complete response (always "Connection: close": one
// request per connection, so an idle client never holds a slot). Bodies of requests are ignored.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "core/result.h"

namespace kgpu::http {

// Size of the request head (request line + headers + blank line) when `received` holds all of it.
std::optional<size_t> head_length(std::string_view received);

struct RequestLine {
  std::string method;  // "GET"
  std::string path;    // "/metrics", without the query string
};
// Parses "METHOD SP target SP HTTP/1.x" from the start of a request head.
Result<RequestLine> parse_request_line(std::string_view head);

std::string response(int status, std::string_view content_type, std::string_view body);

}  // namespace kgpu::http
