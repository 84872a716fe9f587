#pragma once
// A raw HTTP/2 client for transport tests: nghttp2's client session with HTTP messaging checks
// off, so it sends exactly the header fields and DATA it is told (malformed, oversized, too many
// streams), and records what the server answered per stream and for the connection.
#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <algorithm>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace kgpu::test {

class RawH2Client {
 public:
  using Fields = std::vector<std::pair<std::string, std::string>>;
  struct StreamResult {
    std::map<std::string, std::string> headers;  // response headers and trailers
    bool closed = false;
    uint32_t close_code = 0;  // RST_STREAM code, 0 for a normal end
  };

  explicit RawH2Client(const std::string& socket) : RawH2Client(connect_to(socket)) {}
  // Takes a socket already connected (or -1).
  explicit RawH2Client(int connected_fd) : fd_(connected_fd) {
    if (fd_ < 0) return;
    nghttp2_session_callbacks* cb = nullptr;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cb, on_frame);
    nghttp2_option* option = nullptr;
    nghttp2_option_new(&option);
    nghttp2_option_set_no_http_messaging(option, 1);
    nghttp2_session_client_new2(&session_, cb, this, option);
    nghttp2_option_del(option);
    nghttp2_session_callbacks_del(cb);
    nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, nullptr, 0);
    connected_ = true;
  }
  // A unix socket connected to `socket`, or -1.
  static int connect_to(const std::string& socket, int fd = -1) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, socket.c_str(), sizeof(addr.sun_path) - 1);
    if (fd < 0) fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd >= 0 && ::connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
    if (fd >= 0) ::close(fd);
    return -1;
  }
  ~RawH2Client() {
    if (session_) nghttp2_session_del(session_);
    if (fd_ >= 0) ::close(fd_);
  }
  RawH2Client(const RawH2Client&) = delete;
  RawH2Client& operator=(const RawH2Client&) = delete;

  bool connected() const { return connected_; }

  // A request with these fields and, when `body` is given, that DATA (END_STREAM after it unless
  // `keep_open`). Returns the stream id.
  int32_t request(const Fields& fields, const std::string* body = nullptr, bool keep_open = false) {
    std::vector<nghttp2_nv> nva;
    for (const auto& [n, v] : fields)
      nva.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                     reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(), v.size(),
                     NGHTTP2_NV_FLAG_NONE});
    if (!body) return nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), nullptr, nullptr);
    bodies_.push_back(std::make_unique<Body>(Body{*body, 0, keep_open}));
    nghttp2_data_provider provider{};
    provider.source.ptr = bodies_.back().get();
    provider.read_callback = [](nghttp2_session*, int32_t, uint8_t* buf, size_t len, uint32_t* flags,
                                nghttp2_data_source* source, void*) -> ssize_t {
      auto* b = static_cast<Body*>(source->ptr);
      size_t n = std::min(len, b->bytes.size() - b->off);
      std::memcpy(buf, b->bytes.data() + b->off, n);
      b->off += n;
      if (b->off == b->bytes.size()) *flags |= NGHTTP2_DATA_FLAG_EOF | (b->keep_open ? NGHTTP2_DATA_FLAG_NO_END_STREAM : 0);
      return static_cast<ssize_t>(n);
    };
    return nghttp2_submit_request(session_, nullptr, nva.data(), nva.size(), &provider, nullptr);
  }

  // HEADERS with END_STREAM on an open stream: the request's trailers.
  bool trailers(int32_t stream, const Fields& fields) {
    std::vector<nghttp2_nv> nva;
    for (const auto& [n, v] : fields)
      nva.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                     reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(), v.size(),
                     NGHTTP2_NV_FLAG_NONE});
    return nghttp2_submit_headers(session_, NGHTTP2_FLAG_END_STREAM, stream, nullptr, nva.data(), nva.size(),
                                  nullptr) >= 0;
  }
  // Writes everything submitted so far (no waiting for answers).
  bool send_pending() {
    const uint8_t* out = nullptr;
    for (ssize_t n; (n = nghttp2_session_mem_send(session_, &out)) > 0;)
      if (::send(fd_, out, static_cast<size_t>(n), MSG_NOSIGNAL) != n) return false;
    return true;
  }

  // Exchanges frames until `done()` or the deadline; false on timeout. The connection's end
  // (EOF, GOAWAY) ends the exchange too.
  template <typename Done>
  bool run_until(Done done, std::chrono::milliseconds timeout = std::chrono::seconds(10)) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (!done()) {
      if (std::chrono::steady_clock::now() > deadline || eof_) return done();
      const uint8_t* out = nullptr;
      for (ssize_t n; (n = nghttp2_session_mem_send(session_, &out)) > 0;)
        if (::send(fd_, out, static_cast<size_t>(n), MSG_NOSIGNAL) != n) break;
      pollfd p{fd_, POLLIN, 0};
      if (::poll(&p, 1, 20) <= 0) continue;
      uint8_t buf[65536];
      ssize_t n = ::read(fd_, buf, sizeof(buf));
      if (n <= 0) {
        eof_ = true;
        continue;
      }
      if (nghttp2_session_mem_recv(session_, buf, static_cast<size_t>(n)) < 0) eof_ = true;
    }
    return true;
  }

  const StreamResult& stream(int32_t id) { return streams_[id]; }
  bool eof() const { return eof_; }
  bool goaway() const { return goaway_; }
  uint32_t goaway_code() const { return goaway_code_; }

 private:
  struct Body {
    std::string bytes;
    size_t off;
    bool keep_open;
  };
  static int on_header(nghttp2_session*, const nghttp2_frame* f, const uint8_t* n, size_t nl, const uint8_t* v,
                       size_t vl, uint8_t, void* user) {
    static_cast<RawH2Client*>(user)->streams_[f->hd.stream_id].headers[std::string(reinterpret_cast<const char*>(n), nl)] =
        std::string(reinterpret_cast<const char*>(v), vl);
    return 0;
  }
  static int on_close(nghttp2_session*, int32_t id, uint32_t code, void* user) {
    auto& s = static_cast<RawH2Client*>(user)->streams_[id];
    s.closed = true;
    s.close_code = code;
    return 0;
  }
  static int on_frame(nghttp2_session*, const nghttp2_frame* f, void* user) {
    auto* self = static_cast<RawH2Client*>(user);
    if (f->hd.type == NGHTTP2_GOAWAY) {
      self->goaway_ = true;
      self->goaway_code_ = f->goaway.error_code;
    }
    return 0;
  }

  int fd_ = -1;
  bool connected_ = false;
  bool eof_ = false;
  bool goaway_ = false;
  uint32_t goaway_code_ = 0;
  nghttp2_session* session_ = nullptr;
  std::map<int32_t, StreamResult> streams_;
  std::vector<std::unique_ptr<Body>> bodies_;
};

// The header fields of a well-formed gRPC request for `path`.
inline RawH2Client::Fields grpc_fields(const std::string& path) {
  return {{":method", "POST"}, {":scheme", "http"}, {":path", path}, {":authority", "localhost"},
          {"content-type", "application/grpc"}, {"te", "trailers"}};
}

// One gRPC message frame around `payload`.
inline std::string grpc_frame(const std::string& payload) {
  auto n = static_cast<uint32_t>(payload.size());
  std::string out = {0, static_cast<char>(n >> 24), static_cast<char>(n >> 16), static_cast<char>(n >> 8),
                     static_cast<char>(n)};
  return out + payload;
}

}  // namespace kgpu::test
