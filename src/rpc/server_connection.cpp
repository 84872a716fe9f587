#include "rpc/server_connection.h"

#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "rpc/h2_io.h"
#include "rpc/mailbox.h"

namespace kgpu::rpc {

struct ServerConnection::Call {
  int32_t id = 0;
  std::string path;
  std::string content_type;
  MessageReader reader;
  RpcStatus read_error;
  bool dispatched = false;
  bool responded = false;  // response HEADERS submitted
  bool finishing = false;  // trailers follow once the body is out
  bool trailers_submitted = false;
  RpcStatus final_status;
  // The message being written: its prefix, then its bytes.
  std::array<char, kPrefixBytes> prefix{};
  size_t prefix_off = kPrefixBytes;
  std::shared_ptr<const std::string> body;
  size_t body_off = 0;
  std::shared_ptr<ServerStream> stream;  // server-streaming calls only

  bool has_output() const { return prefix_off < kPrefixBytes || (body && body_off < body->size()); }
  void load(std::shared_ptr<const std::string> message) {
    prefix = message_prefix(message->size());
    prefix_off = 0;
    body = std::move(message);
    body_off = 0;
  }
};

ServerConnection::ServerConnection(uint64_t id, UniqueFd fd, std::shared_ptr<const Service> service,
                                   std::shared_ptr<Mailbox> mailbox)
    : id_(id), fd_(std::move(fd)), service_(std::move(service)), mailbox_(std::move(mailbox)) {
  nghttp2_session_callbacks* cb = nullptr;
  if (nghttp2_session_callbacks_new(&cb) != 0) return;
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, &ServerConnection::on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, &ServerConnection::on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, &ServerConnection::on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &ServerConnection::on_frame_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, &ServerConnection::on_stream_close);
  if (nghttp2_session_server_new(&session_, cb, this) != 0) session_ = nullptr;
  nghttp2_session_callbacks_del(cb);
  if (!session_) return;
  nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, 128},
                                       {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, 16 * 1024}};
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 2);
}

ServerConnection::~ServerConnection() {
  // Streams end before the session goes: their on_end callbacks may still post replies, which
  // find no connection and are dropped.
  auto calls = std::move(calls_);
  for (auto& [id, call] : calls)
    if (call->stream) call->stream->mark_ended();
  if (session_) nghttp2_session_del(session_);
}

ServerConnection::Call* ServerConnection::find(int32_t stream) {
  auto it = calls_.find(stream);
  return it == calls_.end() ? nullptr : it->second.get();
}

bool ServerConnection::on_readable() {
  std::array<uint8_t, 64 * 1024> buf;
  ssize_t n = ::read(fd_.get(), buf.data(), buf.size());
  if (n < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
  if (n == 0) return false;
  return nghttp2_session_mem_recv(session_, buf.data(), static_cast<size_t>(n)) >= 0;
}

bool ServerConnection::flush() {
  if (!pump_output(session_, fd_.get(), pending_out_, wants_write_)) return false;
  return nghttp2_session_want_read(session_) || nghttp2_session_want_write(session_);
}

int ServerConnection::on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* self = static_cast<ServerConnection*>(user);
  if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  auto call = std::make_unique<Call>();
  call->id = frame->hd.stream_id;
  self->calls_[call->id] = std::move(call);
  return 0;
}

int ServerConnection::on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                                const uint8_t* value, size_t valuelen, uint8_t, void* user) {
  auto* self = static_cast<ServerConnection*>(user);
  Call* call = self->find(frame->hd.stream_id);
  if (!call || frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  std::string_view n(reinterpret_cast<const char*>(name), namelen);
  std::string_view v(reinterpret_cast<const char*>(value), valuelen);
  if (n == ":path") call->path = v;
  if (n == "content-type") call->content_type = v;
  return 0;
}

int ServerConnection::on_data_chunk(nghttp2_session*, uint8_t, int32_t stream, const uint8_t* data, size_t len,
                                    void* user) {
  auto* self = static_cast<ServerConnection*>(user);
  Call* call = self->find(stream);
  if (!call || call->dispatched) return 0;  // unary and server-streaming calls take one message
  if (call->read_error.ok())
    call->read_error = call->reader.feed(std::string_view(reinterpret_cast<const char*>(data), len));
  return 0;
}

int ServerConnection::on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  auto* self = static_cast<ServerConnection*>(user);
  bool request_end = (frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
                     (frame->hd.flags & NGHTTP2_FLAG_END_STREAM);
  if (!request_end) return 0;
  if (Call* call = self->find(frame->hd.stream_id); call && !call->dispatched) self->dispatch(*call);
  return 0;
}

int ServerConnection::on_stream_close(nghttp2_session*, int32_t stream, uint32_t, void* user) {
  auto* self = static_cast<ServerConnection*>(user);
  auto it = self->calls_.find(stream);
  if (it == self->calls_.end()) return 0;
  auto call = std::move(it->second);
  self->calls_.erase(it);
  if (call->stream) call->stream->mark_ended();
  return 0;
}

void ServerConnection::dispatch(Call& call) {
  call.dispatched = true;
  if (call.content_type.rfind("application/grpc", 0) != 0)
    return respond_trailers_only(call, {Code::Internal, "content-type is not application/grpc"}, "415");
  const Service::Method* method = service_->find(call.path);
  if (!method) return respond_trailers_only(call, {Code::Unimplemented, "unknown method " + call.path});
  if (!call.read_error.ok()) return respond_trailers_only(call, call.read_error);
  auto request = call.reader.next();
  if (!request || call.reader.complete() > 0 || call.reader.in_message())
    return respond_trailers_only(call, {Code::Internal, call.path + " takes exactly one request message"});
  try {
    if (method->unary) {
      method->unary(*request, Responder(mailbox_, id_, call.id));
    } else {
      call.stream = std::make_shared<ServerStream>(mailbox_, id_, call.id);
      method->streaming(*request, call.stream);
    }
  } catch (const std::exception& e) {
    respond_trailers_only(call, {Code::Internal, std::string("handler failed: ") + e.what()});
  } catch (...) {
    respond_trailers_only(call, {Code::Internal, "handler failed"});
  }
}

void ServerConnection::respond_trailers_only(Call& call, const RpcStatus& status, const char* http_status) {
  if (call.responded) return;
  call.responded = call.trailers_submitted = true;
  std::string st = http_status, type = "application/grpc", code = std::to_string(static_cast<int>(status.code)),
              message = percent_encode(status.message);
  std::vector<nghttp2_nv> nva = {header(":status", st), header("content-type", type), header("grpc-status", code)};
  if (!message.empty()) nva.push_back(header("grpc-message", message));
  nghttp2_submit_response(session_, call.id, nva.data(), nva.size(), nullptr);
}

void ServerConnection::respond_with_body(Call& call) {
  call.responded = true;
  std::string st = "200", type = "application/grpc";
  nghttp2_nv nva[] = {header(":status", st), header("content-type", type)};
  nghttp2_data_provider provider{};
  provider.read_callback = &ServerConnection::read_body;
  nghttp2_submit_response(session_, call.id, nva, 2, &provider);
}

void ServerConnection::submit_trailers(Call& call) {
  call.trailers_submitted = true;
  std::string code = std::to_string(static_cast<int>(call.final_status.code)),
              message = percent_encode(call.final_status.message);
  std::vector<nghttp2_nv> nva = {header("grpc-status", code)};
  if (!message.empty()) nva.push_back(header("grpc-message", message));
  nghttp2_submit_trailer(session_, call.id, nva.data(), nva.size());
}

ssize_t ServerConnection::read_body(nghttp2_session*, int32_t stream, uint8_t* buf, size_t length, uint32_t* flags,
                                    nghttp2_data_source*, void* user) {
  auto* self = static_cast<ServerConnection*>(user);
  Call* call = self->find(stream);
  if (!call) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  size_t n = 0;
  while (n < length) {
    if (!call->has_output()) {
      if (!call->stream || call->finishing) break;
      auto next = call->stream->take_next();
      if (next.finish) {
        call->finishing = true;
        call->final_status = next.status;
        break;
      }
      if (!next.message) break;
      call->load(std::move(next.message));
    }
    if (call->prefix_off < kPrefixBytes) {
      size_t take = std::min(kPrefixBytes - call->prefix_off, length - n);
      std::memcpy(buf + n, call->prefix.data() + call->prefix_off, take);
      call->prefix_off += take;
      n += take;
    } else {
      size_t take = std::min(call->body->size() - call->body_off, length - n);
      std::memcpy(buf + n, call->body->data() + call->body_off, take);
      call->body_off += take;
      n += take;
    }
  }
  if (n > 0) return static_cast<ssize_t>(n);
  if (!call->finishing) return NGHTTP2_ERR_DEFERRED;
  *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
  self->submit_trailers(*call);
  return 0;
}

void ServerConnection::complete_unary(int32_t stream, const RpcStatus& status, std::string message) {
  Call* call = find(stream);
  if (!call || call->responded || call->stream) return;
  if (!status.ok()) return respond_trailers_only(*call, status);
  call->load(std::make_shared<const std::string>(std::move(message)));
  call->finishing = true;
  respond_with_body(*call);
}

void ServerConnection::kick_stream(int32_t stream) {
  Call* call = find(stream);
  if (!call || !call->stream || call->trailers_submitted) return;
  if (call->responded) {
    nghttp2_session_resume_data(session_, stream);
    return;
  }
  auto next = call->stream->take_next();
  if (next.finish) return respond_trailers_only(*call, next.status);
  if (!next.message) return;
  call->load(std::move(next.message));
  respond_with_body(*call);
}

}  // namespace kgpu::rpc
