#pragma once
// A raw HTTP/2 client that opens a device plugin's ListAndWatch with the largest flow-control
// windows and then never reads its socket: a kubelet that hangs. Or (kNeverEndingAllocate) one
// that sends an Allocate's HEADERS and never the rest of the request. The plugin's socket buffer fills
// and gRPC's own write to it blocks (unlike a gRPC client that merely never calls Read(), which
// only exhausts the HTTP/2 window). Hand-encoded frames: no HTTP/2 library needed.
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace kgpu::test {

class StuckPeer {
 public:
  enum Call { kListAndWatch, kNeverEndingAllocate };
  explicit StuckPeer(const std::string& path, Call call = kListAndWatch) {
    fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    int small = 4096;
    ::setsockopt(fd_, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
    connected_ = ::connect(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
    std::string out = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    out += frame(0x4, 0, 0, setting(0x4, 0x7fffffff));              // SETTINGS: initial window 2^31-1
    out += frame(0x8, 0, 0, u32(0x7fffffff - 65535));                // WINDOW_UPDATE, connection
    out += frame(0x4, 0x1, 0, "");                                   // SETTINGS ACK (for the server's)
    std::string headers;
    for (auto [k, v] : {std::pair{":method", "POST"}, {":scheme", "http"},
                        {":path", call == kListAndWatch ? "/v1beta1.DevicePlugin/ListAndWatch"
                                                        : "/v1beta1.DevicePlugin/Allocate"},
                        {":authority", "localhost"}, {"content-type", "application/grpc"}, {"te", "trailers"}})
      headers += literal(k, v);
    out += frame(0x1, 0x4, 1, headers);                              // HEADERS, END_HEADERS
    if (call == kListAndWatch)
      out += frame(0x0, 0x1, 1, std::string("\0\0\0\0\0", 5));       // DATA: empty message, END_STREAM
    connected_ = connected_ && ::write(fd_, out.data(), out.size()) == static_cast<ssize_t>(out.size());
  }
  ~StuckPeer() { ::close(fd_); }
  bool connected() const { return connected_; }
  // Waits until the server has written something to this never-read socket (its write started).
  bool wait_readable(int timeout_ms) const {
    pollfd p{fd_, POLLIN, 0};
    return ::poll(&p, 1, timeout_ms) == 1 && (p.revents & POLLIN) != 0;
  }
  // Reads until the server's response HEADERS on the call's stream (the call is being served);
  // false on EOF or after `timeout_ms`. Reading stops there.
  bool wait_response(int timeout_ms) {
    std::string in;
    for (int waited = 0; waited < timeout_ms; waited += 10) {
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 10) != 1) continue;
      char buf[4096];
      ssize_t n = ::read(fd_, buf, sizeof buf);
      if (n <= 0) return false;
      in.append(buf, static_cast<size_t>(n));
      for (size_t at = 0; at + 9 <= in.size();) {
        size_t len = (static_cast<uint8_t>(in[at]) << 16) | (static_cast<uint8_t>(in[at + 1]) << 8) |
                     static_cast<uint8_t>(in[at + 2]);
        if (in[at + 3] == 0x1 && in[at + 8] == 1) return true;  // HEADERS on stream 1
        at += 9 + len;
      }
    }
    return false;
  }

 private:
  static std::string u32(uint32_t v) {
    return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8), static_cast<char>(v)};
  }
  static std::string setting(uint16_t id, uint32_t v) {
    return std::string{static_cast<char>(id >> 8), static_cast<char>(id)} + u32(v);
  }
  static std::string frame(uint8_t type, uint8_t flags, uint32_t stream, const std::string& payload) {
    std::string f = u32(static_cast<uint32_t>(payload.size()) << 8).substr(0, 3);
    f += static_cast<char>(type);
    f += static_cast<char>(flags);
    f += u32(stream);
    return f + payload;
  }
  // HPACK literal header field without indexing, new name, no Huffman (all lengths < 127).
  static std::string literal(const std::string& k, const std::string& v) {
    return std::string(1, '\0') + static_cast<char>(k.size()) + k + static_cast<char>(v.size()) + v;
  }
  int fd_ = -1;
  bool connected_ = false;
};

}  // namespace kgpu::test
