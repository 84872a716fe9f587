#include "rpc/framing.h"

#include <algorithm>

namespace kgpu::rpc {

std::array<char, kPrefixBytes> message_prefix(size_t message_bytes) {
  auto n = static_cast<uint32_t>(message_bytes);
  return {0, static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8), static_cast<char>(n)};
}

std::string frame(std::string_view message) {
  auto prefix = message_prefix(message.size());
  std::string out(prefix.begin(), prefix.end());
  out.append(message);
  return out;
}

RpcStatus MessageReader::feed(std::string_view bytes) {
  while (failed_.ok() && !bytes.empty()) {
    if (buffer_.size() < kPrefixBytes) {
      size_t take = std::min(kPrefixBytes - buffer_.size(), bytes.size());
      buffer_.append(bytes.substr(0, take));
      bytes.remove_prefix(take);
      if (buffer_.size() < kPrefixBytes) break;
      if (buffer_[0] != 0) {
        failed_ = {Code::Unimplemented, "compressed messages are not supported (no grpc-encoding was agreed)"};
        break;
      }
    }
    auto u = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(buffer_[i])); };
    size_t length = (u(1) << 24) | (u(2) << 16) | (u(3) << 8) | u(4);
    if (length > max_message_) {
      failed_ = {Code::ResourceExhausted, "received a message of " + std::to_string(length) +
                                              " bytes, more than the limit of " + std::to_string(max_message_)};
      break;
    }
    size_t have = buffer_.size() - kPrefixBytes;
    size_t take = std::min(length - have, bytes.size());
    // No reserve(length): a 5-byte prefix announcing 4 MiB must not cost 4 MiB before the bytes come.
    buffer_.append(bytes.substr(0, take));
    bytes.remove_prefix(take);
    if (buffer_.size() - kPrefixBytes == length) {
      messages_.push_back(buffer_.substr(kPrefixBytes));
      complete_bytes_ += length;
      buffer_.clear();
      buffer_.shrink_to_fit();
    }
  }
  if (!failed_.ok()) {
    buffer_.clear();
    buffer_.shrink_to_fit();
  }
  return failed_;
}

std::optional<std::string> MessageReader::next() {
  if (messages_.empty()) return std::nullopt;
  std::string m = std::move(messages_.front());
  messages_.pop_front();
  complete_bytes_ -= m.size();
  return m;
}

std::string percent_encode(std::string_view text) {
  static const char* hex = "0123456789ABCDEF";
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    auto b = static_cast<unsigned char>(c);
    if (b >= 0x20 && b <= 0x7e && b != '%') {
      out.push_back(c);
    } else {
      out.push_back('%');
      out.push_back(hex[b >> 4]);
      out.push_back(hex[b & 0xf]);
    }
  }
  return out;
}

namespace {
int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}
}  // namespace

std::string percent_decode(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] == '%' && i + 2 < text.size()) {
      int hi = hex_value(text[i + 1]), lo = hex_value(text[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 2;
        continue;
      }
    }
    out.push_back(text[i]);
  }
  return out;
}

std::optional<std::chrono::nanoseconds> parse_timeout(std::string_view value) {
  if (value.size() < 2 || value.size() > 9) return std::nullopt;
  int64_t n = 0;
  for (char c : value.substr(0, value.size() - 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  using namespace std::chrono;
  switch (value.back()) {
    case 'H': return duration_cast<nanoseconds>(hours(n));
    case 'M': return duration_cast<nanoseconds>(minutes(n));
    case 'S': return duration_cast<nanoseconds>(seconds(n));
    case 'm': return duration_cast<nanoseconds>(milliseconds(n));
    case 'u': return duration_cast<nanoseconds>(microseconds(n));
    case 'n': return nanoseconds(n);
    default: return std::nullopt;
  }
}

std::string format_timeout(std::chrono::milliseconds timeout) {
  int64_t ms = std::max<int64_t>(0, timeout.count());
  if (ms <= 99999999) return std::to_string(ms) + "m";
  int64_t s = std::min<int64_t>(ms / 1000, 99999999);
  return std::to_string(s) + "S";
}

}  // namespace kgpu::rpc
