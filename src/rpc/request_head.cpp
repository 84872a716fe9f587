#include "rpc/request_head.h"

#include <nghttp2/nghttp2.h>

#include <array>

namespace kgpu::rpc {

namespace {

const uint8_t* bytes(std::string_view s) { return reinterpret_cast<const uint8_t*>(s.data()); }

// Fields that belong to one HTTP/1.1 hop and are malformed in HTTP/2 (RFC 9113 §8.2.2).
bool connection_specific(std::string_view name) {
  static constexpr std::array<std::string_view, 5> kNames = {"connection", "keep-alive", "proxy-connection",
                                                             "transfer-encoding", "upgrade"};
  for (auto n : kNames)
    if (n == name) return true;
  return false;
}

std::string hex_byte(unsigned char b) {
  static const char* hex = "0123456789abcdef";
  return std::string("0x") + hex[b >> 4] + hex[b & 0xf];
}

// What is wrong with a value nghttp2 refused, by the first byte it refuses (every control but HTAB).
std::string bad_value_byte(std::string_view value) {
  for (char c : value) {
    auto b = static_cast<unsigned char>(c);
    if (b == '\t' || (b >= 0x20 && b != 0x7f)) continue;
    if (b == 0) return "a NUL byte (0x00)";
    if (b == '\r') return "a CR (0x0d)";
    if (b == '\n') return "an LF (0x0a)";
    if (b == 0x7f) return "a DEL (0x7f)";
    return "a control byte " + hex_byte(b);
  }
  return "a byte HTTP/2 does not allow in a value";
}

// The same for a name that is not a lowercase token.
std::string bad_name_byte(std::string_view name) {
  if (name.empty()) return "nothing (an empty name)";
  for (size_t i = 0; i < name.size(); ++i) {
    auto b = static_cast<unsigned char>(name[i]);
    if (b == ':' && i == 0) continue;
    if (b >= 'A' && b <= 'Z') return std::string("an uppercase letter '") + name[i] + "'";
    if (b < 0x20 || b == 0x7f) return "a control byte " + hex_byte(b);
    if (b >= 0x80) return "a non-ASCII byte " + hex_byte(b);
    if (b == ' ' || std::string_view("\"(),/:;<=>?@[\\]{}").find(name[i]) != std::string_view::npos)
      return std::string("a separator '") + name[i] + "'";
  }
  return "a byte a token does not allow";
}

}  // namespace

bool RequestHeadReader::fail(std::string kind, std::string detail) {
  if (!problem_) problem_ = HeadProblem{std::move(kind), std::move(detail)};
  return false;
}

bool RequestHeadReader::add(std::string_view name, std::string_view value) {
  if (problem_) return false;
  bytes_ += name.size() + value.size() + 32;
  if (bytes_ > max_bytes_) {
    too_large_ = true;
    return fail("header list too large", "the request's headers decode to more than " + std::to_string(max_bytes_) +
                                             " bytes (SETTINGS_MAX_HEADER_LIST_SIZE)");
  }
  if (name.empty() || nghttp2_check_header_name(bytes(name), name.size()) == 0)
    return fail("invalid header name",
                "header name \"" + printable(name, 64) + "\" holds " + bad_name_byte(name) + ", not a lowercase token");
  if (nghttp2_check_header_value(bytes(value), value.size()) == 0)
    return fail("invalid header value", printable(name, 64) + " holds " + bad_value_byte(value));
  return name[0] == ':' ? add_pseudo(name, value) : add_regular(name, value);
}

bool RequestHeadReader::add_pseudo(std::string_view name, std::string_view value) {
  if (regular_seen_) return fail("pseudo-header after a regular header", std::string(name) + " follows a regular field");
  std::string* slot = nullptr;
  if (name == ":method") slot = &head_.method;
  else if (name == ":scheme") slot = &head_.scheme;
  else if (name == ":path") slot = &head_.path;
  else if (name == ":authority") slot = &head_.authority;
  else return fail("unknown pseudo-header", std::string(name) + " is not a request pseudo-header");
  bool seen = name == ":authority" ? head_.has_authority : !slot->empty();
  if (seen) return fail("duplicate pseudo-header", std::string(name) + " appears twice");
  if (name == ":authority") head_.has_authority = true;
  if (value.empty() && name != ":authority") return fail("empty pseudo-header", std::string(name) + " is empty");
  slot->assign(value);
  return true;
}

bool RequestHeadReader::add_regular(std::string_view name, std::string_view value) {
  regular_seen_ = true;
  if (connection_specific(name))
    return fail("connection-specific header", std::string(name) + " is not allowed in HTTP/2");
  if (name == "te") {
    if (value != "trailers") return fail("te other than trailers", "te: " + printable(value));
    head_.te.assign(value);
  } else if (name == "content-type") {
    if (!head_.content_type.empty()) return fail("duplicate content-type", "content-type appears twice");
    head_.content_type.assign(value);
  } else if (name == "grpc-encoding") {
    head_.encoding.assign(value);
  } else if (name == "grpc-timeout") {
    head_.timeout.assign(value);
  }
  return true;
}

bool RequestHeadReader::finish() {
  if (problem_) return false;
  if (head_.method.empty()) return fail("missing pseudo-header", ":method is missing");
  if (head_.scheme.empty()) return fail("missing pseudo-header", ":scheme is missing");
  if (head_.path.empty()) return fail("missing pseudo-header", ":path is missing");
  return true;
}

std::optional<Refusal> grpc_refusal(const RequestHead& head) {
  if (head.method != "POST")
    return Refusal{{Code::Unimplemented, "method " + printable(head.method, 32) + " is not served; gRPC uses POST"},
                   "405"};
  std::string_view type = head.content_type;
  constexpr std::string_view kGrpc = "application/grpc";
  bool grpc_type = type.substr(0, kGrpc.size()) == kGrpc &&
                   (type.size() == kGrpc.size() || type[kGrpc.size()] == '+' || type[kGrpc.size()] == ';');
  if (!grpc_type)
    return Refusal{{Code::Internal, "content-type \"" + printable(type, 64) + "\" is not application/grpc"}, "415"};
  if (head.te != "trailers")
    return Refusal{{Code::Internal, "the request lacks \"te: trailers\", which gRPC requires"}, "400"};
  if (!head.encoding.empty() && head.encoding != "identity")
    return Refusal{{Code::Unimplemented, "grpc-encoding " + printable(head.encoding, 32) +
                                             " is not supported; this server accepts identity only"},
                   "200", true};
  return std::nullopt;
}

std::string printable(std::string_view value, size_t max) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (char c : value.substr(0, max)) {
    auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b < 0x7f && b != '\\') {
      out.push_back(c);
    } else {
      out += "\\x";
      out.push_back(hex[b >> 4]);
      out.push_back(hex[b & 0xf]);
    }
  }
  if (value.size() > max) out += "...(" + std::to_string(value.size()) + " bytes)";
  return out;
}

}  // namespace kgpu::rpc
