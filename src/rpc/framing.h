#pragma once
// The gRPC message framing on HTTP/2 DATA (a 1-byte compressed flag and a 4-byte big-endian length
// before each message) and the text encodings of gRPC's headers. Pure.
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <optional>
#include <string>
#include <string_view>

#include "rpc/status.h"

namespace kgpu::rpc {

// gRPC's default receive limit, which the kubelet keeps: a larger message is refused by either side.
inline constexpr size_t kMaxMessageBytes = 4 * 1024 * 1024;
inline constexpr size_t kPrefixBytes = 5;

std::array<char, kPrefixBytes> message_prefix(size_t message_bytes);
std::string frame(std::string_view message);  // prefix + message

// Splits a stream of DATA bytes into messages. Bytes may arrive in any chunking.
class MessageReader {
 public:
  explicit MessageReader(size_t max_message = kMaxMessageBytes) : max_message_(max_message) {}

  // Error (ResourceExhausted for a message over the limit, Unimplemented for a compressed one);
  // after an error every later feed() returns it again and buffers nothing.
  RpcStatus feed(std::string_view bytes);
  std::optional<std::string> next();  // the oldest complete message
  bool in_message() const { return !buffer_.empty(); }  // an unfinished message is buffered
  size_t complete() const { return messages_.size(); }
  // Memory held (capacity, not size: what a bound on input must count), for input bounds.
  size_t buffered() const { return buffer_.capacity() + complete_bytes_; }

 private:
  size_t max_message_;
  RpcStatus failed_;
  std::string buffer_;  // prefix and body of the message being received
  std::deque<std::string> messages_;
  size_t complete_bytes_ = 0;
};

// grpc-message: printable ASCII except '%' as is, everything else %XX (UTF-8 bytes).
std::string percent_encode(std::string_view text);
std::string percent_decode(std::string_view text);  // malformed escapes are kept as they are

// grpc-timeout: at most 8 digits and a unit (H M S m u n). nullopt when malformed.
std::optional<std::chrono::nanoseconds> parse_timeout(std::string_view value);
std::string format_timeout(std::chrono::milliseconds timeout);  // "1500m"; capped at 8 digits

}  // namespace kgpu::rpc
