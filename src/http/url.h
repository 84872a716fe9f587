#pragma once
// Where an HTTP request goes: scheme, host and port of the API server ("https://10.96.0.1:443",
// "http://127.0.0.1:8001", "https://[fd00::1]:6443", "https://kubernetes.default.svc"). Pure.
#include <cstdint>
#include <string>
#include <string_view>

#include "core/result.h"

namespace kgpu::http {

struct Url {
  bool tls = false;     // https
  std::string host;     // a DNS name, an IPv4 literal, or an IPv6 literal without its brackets
  uint16_t port = 0;    // explicit, or 443 / 80 from the scheme
  std::string base_path;  // what followed the authority ("" or "/prefix", no trailing '/')

  bool host_is_ipv6() const { return host.find(':') != std::string::npos; }
  // "host:port" as the Host header and messages write it (IPv6 in brackets).
  std::string authority() const;
  // "https://host:port" + base_path, for messages.
  std::string to_string() const;
};

// Parses "http[s]://host[:port][/path]". No user info, query or fragment (an API server base URL
// has none); a port of 1..65535; a host of DNS name characters, an IPv4 literal or a bracketed IPv6
// literal.
Result<Url> parse_url(std::string_view text);

// True when `host` is an IPv4 or IPv6 literal (the TLS check then compares IP SANs, and no SNI).
bool is_ip_literal(const std::string& host);

}  // namespace kgpu::http
