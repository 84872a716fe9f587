#include "rpc/client.h"

#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <vector>

#include "core/unique_fd.h"
#include "rpc/h2_io.h"

namespace kgpu::rpc {

namespace {

using Clock = std::chrono::steady_clock;

// One call's state, shared with nghttp2's callbacks.
struct Exchange {
  std::string body;  // framed request
  size_t body_off = 0;
  int32_t stream = -1;
  std::string http_status;
  std::string content_type;
  std::string grpc_status;  // from trailers (or a trailers-only answer)
  std::string grpc_message;
  MessageReader reader;
  RpcStatus read_error;
  bool closed = false;
  uint32_t close_code = 0;

  explicit Exchange(size_t max) : reader(max) {}
};

ssize_t read_request(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags, nghttp2_data_source*,
                     void* user) {
  auto* ex = static_cast<Exchange*>(user);
  size_t n = std::min(length, ex->body.size() - ex->body_off);
  std::memcpy(buf, ex->body.data() + ex->body_off, n);
  ex->body_off += n;
  if (ex->body_off == ex->body.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

int on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen, const uint8_t* value,
              size_t valuelen, uint8_t, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  if (frame->hd.stream_id != ex->stream) return 0;
  std::string_view n(reinterpret_cast<const char*>(name), namelen);
  std::string v(reinterpret_cast<const char*>(value), valuelen);
  if (n == ":status") ex->http_status = v;
  else if (n == "content-type") ex->content_type = v;
  else if (n == "grpc-status") ex->grpc_status = v;
  else if (n == "grpc-message") ex->grpc_message = percent_decode(v);
  return 0;
}

int on_data(nghttp2_session*, uint8_t, int32_t stream, const uint8_t* data, size_t len, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  if (stream == ex->stream && ex->read_error.ok())
    ex->read_error = ex->reader.feed(std::string_view(reinterpret_cast<const char*>(data), len));
  return 0;
}

int on_close(nghttp2_session*, int32_t stream, uint32_t code, void* user) {
  auto* ex = static_cast<Exchange*>(user);
  if (stream == ex->stream) {
    ex->closed = true;
    ex->close_code = code;
  }
  return 0;
}

struct Session {
  nghttp2_session* s = nullptr;
  ~Session() {
    if (s) nghttp2_session_del(s);
  }
};

Result<UniqueFd> connect_unix(const std::string& path, Clock::time_point deadline) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) return Error::invalid("socket path too long: " + path);
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Error::unavailable(std::string("socket(): ") + std::strerror(errno));
  if (::connect(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) == 0) return fd;
  if (errno != EINPROGRESS && errno != EAGAIN)
    return Error::unavailable("cannot connect to " + path + ": " + std::strerror(errno));
  // A unix socket whose backlog is full: wait for room until the deadline.
  pollfd p{fd.get(), POLLOUT, 0};
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  if (::poll(&p, 1, static_cast<int>(std::max<int64_t>(0, left))) <= 0)
    return Error::unavailable("cannot connect to " + path + ": no answer before the deadline");
  int err = 0;
  socklen_t len = sizeof(err);
  ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
  if (err != 0) return Error::unavailable("cannot connect to " + path + ": " + std::strerror(err));
  return fd;
}

// A streaming call's first message arrived while its stream is still open.
CallResult first_message(Exchange& ex, std::string_view path) {
  if (ex.http_status != "200")
    return {{Code::Internal, std::string(path) + ": HTTP status " + (ex.http_status.empty() ? "missing" : ex.http_status)},
            {}};
  if (!ex.read_error.ok()) return {ex.read_error, {}};
  return {{}, std::move(*ex.reader.next())};
}

CallResult finish(const Exchange& ex, std::string_view path) {
  if (ex.close_code != 0 && ex.grpc_status.empty())
    return {{Code::Unavailable, std::string(path) + ": the stream was reset (HTTP/2 error " +
                                    std::to_string(ex.close_code) + ")"}, {}};
  if (ex.http_status != "200")
    return {{Code::Internal, std::string(path) + ": HTTP status " + (ex.http_status.empty() ? "missing" : ex.http_status)},
            {}};
  if (ex.grpc_status.empty()) return {{Code::Internal, std::string(path) + ": the answer has no grpc-status"}, {}};
  int code = 0;
  for (char c : ex.grpc_status) {
    if (c < '0' || c > '9' || code > 100) return {{Code::Internal, "malformed grpc-status " + ex.grpc_status}, {}};
    code = code * 10 + (c - '0');
  }
  if (code != 0) return {{code <= 16 ? static_cast<Code>(code) : Code::Unknown, ex.grpc_message}, {}};
  if (!ex.read_error.ok()) return {ex.read_error, {}};
  MessageReader reader = ex.reader;
  auto message = reader.next();
  if (!message || reader.complete() > 0 || reader.in_message())
    return {{Code::Internal, std::string(path) + ": expected exactly one response message"}, {}};
  return {{}, std::move(*message)};
}

// Until the stream closes, or (`until_first_message`) until its first message is complete.
CallResult exchange(const std::string& socket_path, std::string_view path, std::string_view request,
                    std::chrono::milliseconds timeout, size_t max_response,
                    const std::function<void(const Peer&)>& on_connected, bool until_first_message) {
  auto deadline = Clock::now() + timeout;
  auto fd = connect_unix(socket_path, deadline);
  if (!fd) return {{Code::Unavailable, fd.error().message}, {}};
  if (on_connected) on_connected(peer_of(fd->get()));

  Exchange ex(max_response);
  ex.body = frame(request);
  nghttp2_session_callbacks* cb = nullptr;
  if (nghttp2_session_callbacks_new(&cb) != 0) return {{Code::Internal, "nghttp2: out of memory"}, {}};
  nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
  Session session;
  int rc = nghttp2_session_client_new(&session.s, cb, &ex);
  nghttp2_session_callbacks_del(cb);
  if (rc != 0) return {{Code::Internal, "nghttp2: cannot create a session"}, {}};

  nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                       {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1 << 20}};
  nghttp2_submit_settings(session.s, NGHTTP2_FLAG_NONE, settings, 2);
  std::string method = "POST", scheme = "http", authority = "localhost", p(path), type = "application/grpc",
              te = "trailers", grpc_timeout = format_timeout(timeout);
  nghttp2_nv nva[] = {header(":method", method),    header(":scheme", scheme),   header(":authority", authority),
                      header(":path", p),           header("content-type", type), header("te", te),
                      header("grpc-timeout", grpc_timeout)};
  nghttp2_data_provider provider{};
  provider.read_callback = read_request;
  ex.stream = nghttp2_submit_request(session.s, nullptr, nva, 7, &provider, nullptr);
  if (ex.stream < 0) return {{Code::Internal, "nghttp2: cannot submit the request"}, {}};

  PendingOutput out;
  bool want_out = false;
  std::array<uint8_t, 64 * 1024> buf;
  while (!ex.closed) {
    if (until_first_message && ex.reader.complete() > 0) return first_message(ex, path);
    if (!pump_output(session.s, fd->get(), out, want_out))
      return {{Code::Unavailable, socket_path + ": the connection broke while sending"}, {}};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) return {{Code::DeadlineExceeded, std::string(path) + ": no answer before the deadline"}, {}};
    pollfd pfd{fd->get(), static_cast<short>(POLLIN | (want_out ? POLLOUT : 0)), 0};
    int ready = ::poll(&pfd, 1, static_cast<int>(left));
    if (ready < 0 && errno != EINTR) return {{Code::Internal, std::string("poll: ") + std::strerror(errno)}, {}};
    if (ready <= 0 || !(pfd.revents & (POLLIN | POLLHUP | POLLERR))) continue;
    ssize_t n = ::read(fd->get(), buf.data(), buf.size());
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) continue;
    if (n <= 0) {
      if (ex.closed) break;
      return {{Code::Unavailable, socket_path + ": the connection closed before the answer was complete"}, {}};
    }
    if (nghttp2_session_mem_recv(session.s, buf.data(), static_cast<size_t>(n)) < 0)
      return {{Code::Internal, socket_path + ": the answer is not valid HTTP/2"}, {}};
  }
  if (!until_first_message) return finish(ex, path);
  // The stream closed: with a message and an OK (or no) status, that message; else its status.
  const bool ok_status = ex.grpc_status.empty() || ex.grpc_status == "0";
  if (ex.reader.complete() > 0 && ok_status && ex.close_code == 0) return first_message(ex, path);
  auto result = finish(ex, path);
  if (result.status.ok()) return {{Code::Internal, std::string(path) + ": the stream ended without a message"}, {}};
  return result;
}

}  // namespace

CallResult call_unary(const std::string& socket_path, std::string_view path, std::string_view request,
                      std::chrono::milliseconds timeout, size_t max_response,
                      const std::function<void(const Peer&)>& on_connected) {
  return exchange(socket_path, path, request, timeout, max_response, on_connected, false);
}

CallResult call_first_message(const std::string& socket_path, std::string_view path, std::string_view request,
                              std::chrono::milliseconds timeout, size_t max_response) {
  return exchange(socket_path, path, request, timeout, max_response, {}, true);
}

}  // namespace kgpu::rpc
