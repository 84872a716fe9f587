#pragma once
// A gRPC request's header block, checked field by field as nghttp2 decodes it. Pure.
//
// kgpu's sessions run with nghttp2's HTTP messaging validation off: it refuses a `/` in
// `:authority`, and every kubelet before 1.26 sends the socket path there (grpc-go puts the dial
// target in `:authority` unless WithAuthority is given; Kubernetes PR 112597 added "localhost" in
// 1.26). `:authority` is only a label for a unix socket, so any value, or none, is served. The
// rules of RFC 9113 §8 that do matter are kept here instead: lowercase field names without
// controls, values without control bytes (HTAB aside), the four request pseudo-headers only, each at most once and
// before every regular field, `:method`, `:scheme` and a non-empty `:path` present, no
// connection-specific fields, `te` only as "trailers", and the decoded size bounded. A block that
// breaks one is malformed: its stream is reset with PROTOCOL_ERROR (RFC 9113 §8.1.1).
//
// What gRPC itself refuses in a well-formed block (another method than POST, a content-type that
// is not gRPC's, no `te: trailers`, a compression we do not speak) is answered with a status by
// grpc_refusal(), as gRPC C++ does.
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

#include "rpc/status.h"

namespace kgpu::rpc {

// What we advertise as SETTINGS_MAX_HEADER_LIST_SIZE, counted as RFC 9113 §6.5.2 does (name +
// value + 32 per field).
inline constexpr size_t kMaxHeaderListBytes = 16 * 1024;

struct RequestHead {
  std::string method, scheme, path, authority, content_type, te, encoding, timeout;
  bool has_authority = false;
};

// Why a block was refused; `kind` is a fixed phrase (for counting and for logging once per
// peer), `detail` names the field.
struct HeadProblem {
  std::string kind;
  std::string detail;
};

class RequestHeadReader {
 public:
  explicit RequestHeadReader(size_t max_bytes = kMaxHeaderListBytes) : max_bytes_(max_bytes) {}

  // One decoded field; false once the block is malformed or over the size bound (problem()).
  bool add(std::string_view name, std::string_view value);
  // The end of the block: the required pseudo-headers were there. False: problem().
  bool finish();

  bool failed() const { return problem_.has_value(); }
  bool too_large() const { return too_large_; }
  const std::optional<HeadProblem>& problem() const { return problem_; }
  const RequestHead& head() const { return head_; }

 private:
  bool fail(std::string kind, std::string detail);
  bool add_pseudo(std::string_view name, std::string_view value);
  bool add_regular(std::string_view name, std::string_view value);

  size_t max_bytes_;
  size_t bytes_ = 0;
  bool regular_seen_ = false;
  bool too_large_ = false;
  RequestHead head_;
  std::optional<HeadProblem> problem_;
};

// gRPC's answer to a well-formed request it will not serve: a trailers-only response.
struct Refusal {
  RpcStatus status;
  const char* http_status = "200";
  bool advertise_identity_encoding = false;  // send grpc-accept-encoding: identity
};
std::optional<Refusal> grpc_refusal(const RequestHead& head);

// A value as it may appear in a log line: at most `max` bytes, controls and non-ASCII escaped.
std::string printable(std::string_view value, size_t max = 256);

}  // namespace kgpu::rpc
