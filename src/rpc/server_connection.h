#pragma once
// One accepted HTTP/2 connection of the gRPC server: its nghttp2 session and its calls. Used only
// on the server's thread. Output is produced a frame at a time and only while the socket takes
// it, so a peer that stops reading holds at most one frame here (and its streams' two messages).
#include <nghttp2/nghttp2.h>

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include "core/unique_fd.h"
#include "rpc/framing.h"
#include "rpc/h2_io.h"
#include "rpc/server.h"

namespace kgpu::rpc {

class ServerConnection {
 public:
  ServerConnection(uint64_t id, UniqueFd fd, std::shared_ptr<const Service> service, std::shared_ptr<Mailbox> mailbox);
  ~ServerConnection();  // ends every open stream
  ServerConnection(const ServerConnection&) = delete;
  ServerConnection& operator=(const ServerConnection&) = delete;

  bool valid() const { return session_ != nullptr; }
  int fd() const { return fd_.get(); }
  // Reads what the socket has; false: the connection is over (EOF, error, protocol violation).
  bool on_readable();
  // Writes what nghttp2 has to send, as far as the socket takes it; false: the connection is over.
  bool flush();
  bool wants_write() const { return wants_write_; }

  void complete_unary(int32_t stream, const RpcStatus& status, std::string message);
  void kick_stream(int32_t stream);

 private:
  struct Call;
  static int on_begin_headers(nghttp2_session*, const nghttp2_frame*, void*);
  static int on_header(nghttp2_session*, const nghttp2_frame*, const uint8_t*, size_t, const uint8_t*, size_t, uint8_t,
                       void*);
  static int on_data_chunk(nghttp2_session*, uint8_t, int32_t, const uint8_t*, size_t, void*);
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame*, void*);
  static int on_stream_close(nghttp2_session*, int32_t, uint32_t, void*);
  static ssize_t read_body(nghttp2_session*, int32_t, uint8_t*, size_t, uint32_t*, nghttp2_data_source*, void*);

  Call* find(int32_t stream);
  void dispatch(Call& call);
  void respond_trailers_only(Call& call, const RpcStatus& status, const char* http_status = "200");
  void respond_with_body(Call& call);
  void submit_trailers(Call& call);

  uint64_t id_;
  UniqueFd fd_;
  std::shared_ptr<const Service> service_;
  std::shared_ptr<Mailbox> mailbox_;
  nghttp2_session* session_ = nullptr;
  std::unordered_map<int32_t, std::unique_ptr<Call>> calls_;
  PendingOutput pending_out_;
  bool wants_write_ = false;
};

}  // namespace kgpu::rpc
