#include "metrics/http_exchange.h"

namespace kgpu::http {

std::optional<size_t> head_length(std::string_view received) {
  if (auto crlf = received.find("\r\n\r\n"); crlf != std::string_view::npos) return crlf + 4;
  if (auto lf = received.find("\n\n"); lf != std::string_view::npos) return lf + 2;  // tolerated by RFC 9112
  return std::nullopt;
}

Result<RequestLine> parse_request_line(std::string_view head) {
  std::string_view line = head.substr(0, head.find('\n'));
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  auto sp1 = line.find(' ');
  auto sp2 = sp1 == std::string_view::npos ? sp1 : line.find(' ', sp1 + 1);
  if (sp1 == 0 || sp2 == std::string_view::npos || sp2 == sp1 + 1 || line.substr(sp2 + 1).rfind("HTTP/1.", 0) != 0)
    return Error::invalid("malformed HTTP request line");
  std::string_view target = line.substr(sp1 + 1, sp2 - sp1 - 1);
  if (target.front() != '/') return Error::invalid("HTTP request target must be a path");
  target = target.substr(0, target.find('?'));
  return RequestLine{std::string(line.substr(0, sp1)), std::string(target)};
}

namespace {
std::string_view reason(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 431: return "Request Header Fields Too Large";
    case 503: return "Service Unavailable";
    default: return "Error";
  }
}
}  // namespace

std::string response(int status, std::string_view content_type, std::string_view body) {
  std::string out = "HTTP/1.1 " + std::to_string(status) + " " + std::string(reason(status)) + "\r\n";
  out += "Content-Type: " + std::string(content_type) + "\r\n";
  out += "Content-Length: " + std::to_string(body.size()) + "\r\n";
  if (status == 405) out += "Allow: GET, HEAD\r\n";
  out += "Connection: close\r\n\r\n";
  out += body;
  return out;
}

}  // namespace kgpu::http
