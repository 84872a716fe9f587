// serialize_request(): the request as it goes on the wire. Anything that could split or smuggle a
// header (CR, LF, NUL, a non-token name) is refused rather than escaped.
#include <algorithm>

#include "http/client.h"

namespace kgpu::http {

namespace {

bool is_token(std::string_view s) {
  return !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
  });
}

bool is_field_value(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) {
    const auto u = static_cast<unsigned char>(c);
    return u == '\t' || (u >= 0x20 && u != 0x7f);
  });
}

bool is_target(std::string_view s) {
  return s.starts_with('/') && std::all_of(s.begin(), s.end(), [](char c) {
           const auto u = static_cast<unsigned char>(c);
           return u > 0x20 && u < 0x7f;
         });
}

bool same_name(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return (x | 0x20) == (y | 0x20);
         });
}

}  // namespace

Result<std::string> serialize_request(const Request& r) {
  if (!is_token(r.method)) return Error::invalid("HTTP method '" + r.method + "' is not a token");
  if (!is_target(r.target))
    return Error::invalid("request target '" + r.target + "' must start with '/' and have no spaces or controls");
  if (!is_field_value(r.bearer_token) || r.bearer_token.find_first_of(" \t") != std::string::npos)
    return Error::invalid("the bearer token has a space or control character");
  std::string out = r.method + " " + r.url.base_path + r.target + " HTTP/1.1\r\nHost: " + r.url.authority() +
                    "\r\nConnection: close\r\n";
  if (!r.bearer_token.empty()) out += "Authorization: Bearer " + r.bearer_token + "\r\n";
  for (const auto& [name, value] : r.headers) {
    if (!is_token(name)) return Error::invalid("header name '" + name + "' is not a token");
    if (!is_field_value(value)) return Error::invalid("header '" + name + "' has a control character in its value");
    for (std::string_view own : {"host", "connection", "content-length", "transfer-encoding", "authorization"})
      if (same_name(name, own)) return Error::invalid("header '" + name + "' is set by the HTTP client itself");
    out += name + ": " + value + "\r\n";
  }
  if (!r.body.empty() || r.method == "POST" || r.method == "PUT" || r.method == "PATCH")
    out += "Content-Length: " + std::to_string(r.body.size()) + "\r\n";
  out += "\r\n";
  out += r.body;
  return out;
}

}  // namespace kgpu::http
