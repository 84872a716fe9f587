#include "http/url.h"

#include <arpa/inet.h>

#include <charconv>

namespace kgpu::http {

namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
         c == '_';
}

Result<uint16_t> parse_port(std::string_view text, std::string_view url) {
  unsigned value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || value == 0 || value > 65535)
    return Error::invalid("URL '" + std::string(url) + "': port '" + std::string(text) + "' is not 1..65535");
  return static_cast<uint16_t>(value);
}

}  // namespace

bool is_ip_literal(const std::string& host) {
  unsigned char buf[16];
  return ::inet_pton(AF_INET, host.c_str(), buf) == 1 || ::inet_pton(AF_INET6, host.c_str(), buf) == 1;
}

std::string Url::authority() const {
  return (host_is_ipv6() ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::string Url::to_string() const { return (tls ? "https://" : "http://") + authority() + base_path; }

Result<Url> parse_url(std::string_view text) {
  const std::string quoted = "URL '" + std::string(text) + "'";
  Url url;
  std::string_view rest;
  if (text.starts_with("https://")) {
    url.tls = true;
    rest = text.substr(8);
  } else if (text.starts_with("http://")) {
    rest = text.substr(7);
  } else {
    return Error::invalid(quoted + ": the scheme must be http:// or https://");
  }
  const size_t slash = rest.find('/');
  std::string_view authority = rest.substr(0, slash);
  std::string_view path = slash == std::string_view::npos ? std::string_view() : rest.substr(slash);
  if (path.find_first_of("?#") != std::string_view::npos)
    return Error::invalid(quoted + ": a base URL has no query or fragment");
  for (char c : path)
    if (static_cast<unsigned char>(c) <= 0x20 || c == 0x7f)
      return Error::invalid(quoted + ": the path has a space or control character");
  while (path.ends_with('/')) path.remove_suffix(1);
  url.base_path = std::string(path);
  if (authority.find('@') != std::string_view::npos)
    return Error::invalid(quoted + ": user information in the URL is not supported");

  std::string_view port_text;
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return Error::invalid(quoted + ": '[' without ']' around the IPv6 address");
    url.host = std::string(authority.substr(1, close - 1));
    unsigned char buf[16];
    if (::inet_pton(AF_INET6, url.host.c_str(), buf) != 1)
      return Error::invalid(quoted + ": '" + url.host + "' is not an IPv6 address");
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return Error::invalid(quoted + ": unexpected text after ']'");
      port_text = after.substr(1);
      if (port_text.empty()) return Error::invalid(quoted + ": ':' without a port");
    }
  } else {
    const size_t colon = authority.find(':');
    url.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return Error::invalid(quoted + ": ':' without a port");
    }
    for (char c : url.host)
      if (!is_name_char(c)) return Error::invalid(quoted + ": the host has a character that is not allowed");
  }
  if (url.host.empty()) return Error::invalid(quoted + ": no host");
  if (port_text.empty()) {
    url.port = url.tls ? 443 : 80;
  } else {
    auto port = parse_port(port_text, text);
    if (!port) return port.error();
    url.port = *port;
  }
  return url;
}

}  // namespace kgpu::http
