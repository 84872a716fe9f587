#include "rpc/server_connection.h"

#include <spdlog/spdlog.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "rpc/h2_io.h"
#include "rpc/mailbox.h"

namespace kgpu::rpc {

struct ServerConnection::Call {
  int32_t id = 0;
  uint64_t seq = 0;
  Clock::time_point opened_at = Clock::now();
  RequestHeadReader head;
  const Service::Method* method = nullptr;  // known once the headers are complete and accepted
  std::optional<Clock::time_point> deadline;  // grpc-timeout
  bool refused = false;                     // reset or answered before the request was complete
  bool stop_sender = false;                 // RST_STREAM(NO_ERROR) once the response is out
  std::optional<HeadProblem> reset_cause;   // why we reset it, for the log
  MessageReader reader;
  size_t charged = 0;  // bytes of `reader` counted in the budgets
  RpcStatus read_error;
  bool dispatched = false;
  bool responded = false;  // response HEADERS submitted
  bool finishing = false;  // trailers follow once the body is out
  bool trailers_submitted = false;
  bool pinned = false;  // writing a message a newer one has superseded (counted in budget.pinned)
  RpcStatus final_status;
  // The message being written: its prefix, then its bytes.
  std::array<char, kPrefixBytes> prefix{};
  size_t prefix_off = kPrefixBytes;
  std::shared_ptr<const std::string> body;
  size_t body_off = 0;
  std::shared_ptr<ServerStream> stream;  // server-streaming calls only
  // Unary calls only: set once the call is over (answered, reset, its connection gone), so that a
  // handler still working on it can tell nobody waits any more (Responder::cancelled()).
  std::shared_ptr<std::atomic<bool>> ended;
  void end() {
    if (ended) ended->store(true, std::memory_order_release);
  }

  // HEADERS in, END_STREAM not yet, and not answered: the request is still arriving.
  bool arriving() const { return !dispatched && !refused && !responded; }
  bool has_output() const { return prefix_off < kPrefixBytes || (body && body_off < body->size()); }
  void load(std::shared_ptr<const std::string> message) {
    prefix = message_prefix(message->size());
    prefix_off = 0;
    body = std::move(message);
    body_off = 0;
  }
};

namespace {

// nghttp2 is C: an exception must never unwind through it. A callback that throws (bad_alloc, a
// bug) fails its session, which ends this connection only.
template <typename Result, typename Fn>
Result guarded(Fn&& fn) noexcept {
  try {
    return fn();
  } catch (const std::exception& e) {
    spdlog::error("gRPC server: a connection failed inside a callback: {}", e.what());
  } catch (...) {
    spdlog::error("gRPC server: a connection failed inside a callback");
  }
  return NGHTTP2_ERR_CALLBACK_FAILURE;
}

ServerConnection* self_of(void* user) { return static_cast<ServerConnection*>(user); }

std::string bounded_message(const std::string& message) {
  if (message.size() <= ServerConnection::kMaxStatusMessage) return percent_encode(message);
  return percent_encode(message.substr(0, ServerConnection::kMaxStatusMessage)) + "...(" +
         std::to_string(message.size()) + " bytes)";
}

}  // namespace

ServerConnection::ServerConnection(uint64_t id, UniqueFd fd, std::shared_ptr<const Service> service,
                                   std::shared_ptr<Mailbox> mailbox, TransportLog& log, InputBudget& budget,
                                   PeerLedger& ledger)
    : id_(id), fd_(std::move(fd)), peer_(peer_of(fd_.get())), log_(log), budget_(budget), ledger_(ledger),
      service_(std::move(service)), mailbox_(std::move(mailbox)) {
  nghttp2_session_callbacks* cb = nullptr;
  if (nghttp2_session_callbacks_new(&cb) != 0) return;
  nghttp2_session_callbacks_set_on_begin_headers_callback(cb, &ServerConnection::on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cb, &ServerConnection::on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, &ServerConnection::on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &ServerConnection::on_frame_recv);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, &ServerConnection::on_stream_close);
  nghttp2_session_callbacks_set_on_frame_send_callback(cb, &ServerConnection::on_frame_send);
  nghttp2_session_callbacks_set_on_frame_not_send_callback(cb, &ServerConnection::on_frame_not_send);
  nghttp2_session_callbacks_set_on_invalid_frame_recv_callback(cb, &ServerConnection::on_invalid_frame_recv);
  // HTTP messaging validation off: it refuses the socket path that kubelets before 1.26 send as
  // :authority. RequestHeadReader applies the rules that matter instead (see request_head.h).
  nghttp2_option* option = nullptr;
  if (nghttp2_option_new(&option) == 0) {
    nghttp2_option_set_no_http_messaging(option, 1);
    if (nghttp2_session_server_new2(&session_, cb, this, option) != 0) session_ = nullptr;
    nghttp2_option_del(option);
  }
  nghttp2_session_callbacks_del(cb);
  if (!session_) return;
  // No SETTINGS_MAX_CONCURRENT_STREAMS: nghttp2 answers a stream beyond an advertised limit with a
  // connection error, where RFC 9113 §5.1.2 asks for a stream error. kMaxStreams is enforced in
  // begin_headers with REFUSED_STREAM, which gRPC clients retry.
  nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, kMaxHeaderListBytes}};
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, 1);
}

ServerConnection::~ServerConnection() {
  // Streams end before the session goes: their on_end callbacks may still post replies, which
  // find no connection and are dropped.
  auto calls = std::move(calls_);
  for (auto& [id, call] : calls) {
    ledger_.call_closed(peer_);
    release_input(*call);
    set_pinned(*call, false);
    call->end();
    if (call->stream) call->stream->mark_ended();
  }
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
  ssize_t rv = nghttp2_session_mem_recv(session_, buf.data(), static_cast<size_t>(n));
  if (rv >= 0 && !terminated_) return true;
  if (!terminated_) {
    std::string why = last_library_error_.empty() ? nghttp2_strerror(static_cast<int>(rv)) : last_library_error_;
    uint32_t code = rv == NGHTTP2_ERR_FLOODED ? NGHTTP2_ENHANCE_YOUR_CALM : NGHTTP2_PROTOCOL_ERROR;
    terminate(code, "not valid HTTP/2", why);
  }
  flush();  // the GOAWAY, where the socket takes it now; never waits
  return false;
}

void ServerConnection::terminate(uint32_t code, std::string_view cause, std::string_view detail,
                                 std::optional<int32_t> last_stream) {
  if (terminated_) return;
  terminated_ = true;
  record({ErrorScope::Connection, code, cause, detail, {}, {}});
  if (last_stream) nghttp2_session_terminate_session2(session_, *last_stream, code);
  else nghttp2_session_terminate_session(session_, code);
}

bool ServerConnection::flush() {
  if (!pump_output(session_, fd_.get(), pending_out_, wants_write_)) return false;
  return nghttp2_session_want_read(session_) || nghttp2_session_want_write(session_);
}

std::optional<Clock::time_point> ServerConnection::stalled_since() const {
  std::optional<Clock::time_point> oldest;
  for (const auto& [id, call] : calls_)
    if (call->arriving() && (!oldest || call->opened_at < *oldest)) oldest = call->opened_at;
  return oldest;
}

size_t ServerConnection::open_streams() const {
  size_t n = 0;
  for (const auto& [id, call] : calls_) n += call->stream && !call->trailers_submitted ? 1 : 0;
  return n;
}

std::optional<Clock::time_point> ServerConnection::next_deadline() const {
  std::optional<Clock::time_point> next;
  auto consider = [&](Clock::time_point t) {
    if (!next || t < *next) next = t;
  };
  if (!handshaken_) consider(accepted_at_ + kHandshakeDeadline);
  for (const auto& [id, call] : calls_) {
    if (call->deadline && !call->trailers_submitted) consider(*call->deadline);
    if (call->arriving()) consider(call->opened_at + budget_.unfinished_request);
  }
  return next;
}

bool ServerConnection::expire(Clock::time_point now) {
  if (!handshaken_ && now >= accepted_at_ + kHandshakeDeadline) {
    record({ErrorScope::Connection, NGHTTP2_NO_ERROR, "no HTTP/2 handshake in time",
            "no client preface and SETTINGS within 5 s", {}, {}});
    return false;
  }
  std::vector<Call*> unended;
  for (auto& [id, call] : calls_)
    if (call->arriving() && call->opened_at + budget_.unfinished_request <= now) unended.push_back(call.get());
  for (Call* call : unended)
    reset(*call, NGHTTP2_CANCEL,
          {"unfinished request", "the request did not end within " +
                                     std::to_string(budget_.unfinished_request.count()) + " ms of its HEADERS"});
  std::vector<Call*> due;
  for (auto& [id, call] : calls_)
    if (call->deadline && *call->deadline <= now && !call->trailers_submitted) due.push_back(call.get());
  for (Call* call : due) {
    RpcStatus late{Code::DeadlineExceeded, "the call's grpc-timeout passed"};
    call->deadline.reset();
    if (call->stream && call->responded) {
      call->stream->finish(late);  // after the message being written; the kick ends it
    } else if (!call->dispatched) {
      refuse(*call, late);
    } else {
      respond_trailers_only(*call, late);
      call->end();  // the handler's answer would be dropped: it may stop working on it
    }
  }
  return true;
}

// ---- nghttp2 callbacks: each one guarded, then a member that does the work ----

int ServerConnection::on_begin_headers(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  return guarded<int>([&] { return self_of(user)->begin_headers(*frame); });
}

int ServerConnection::on_header(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                                const uint8_t* value, size_t valuelen, uint8_t, void* user) {
  return guarded<int>([&] {
    return self_of(user)->header_field(*frame, {reinterpret_cast<const char*>(name), namelen},
                                 {reinterpret_cast<const char*>(value), valuelen});
  });
}

int ServerConnection::on_data_chunk(nghttp2_session*, uint8_t, int32_t stream, const uint8_t* data, size_t len,
                                    void* user) {
  return guarded<int>([&] {
    self_of(user)->data_chunk(stream, {reinterpret_cast<const char*>(data), len});
    return 0;
  });
}

int ServerConnection::on_frame_recv(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  return guarded<int>([&] {
    self_of(user)->frame_recv(*frame);
    return 0;
  });
}

int ServerConnection::on_stream_close(nghttp2_session*, int32_t stream, uint32_t, void* user) {
  return guarded<int>([&] {
    self_of(user)->stream_closed(stream);
    return 0;
  });
}

int ServerConnection::on_frame_send(nghttp2_session*, const nghttp2_frame* frame, void* user) {
  return guarded<int>([&] {
    self_of(user)->frame_sent(*frame);
    return 0;
  });
}

int ServerConnection::on_frame_not_send(nghttp2_session*, const nghttp2_frame* frame, int, void* user) {
  return guarded<int>([&] {
    // A response HEADERS or trailers nghttp2 could not send (e.g. a field the peer's limits
    // refuse): reset the stream rather than leave the client waiting for an answer forever.
    auto* self = self_of(user);
    if (frame->hd.type == NGHTTP2_HEADERS && frame->hd.stream_id > 0)
      nghttp2_submit_rst_stream(self->session_, NGHTTP2_FLAG_NONE, frame->hd.stream_id, NGHTTP2_INTERNAL_ERROR);
    return 0;
  });
}

int ServerConnection::on_invalid_frame_recv(nghttp2_session*, const nghttp2_frame*, int library_error, void* user) {
  return guarded<int>([&] {
    self_of(user)->last_library_error_ = nghttp2_strerror(library_error);
    return 0;
  });
}

ssize_t ServerConnection::read_body(nghttp2_session*, int32_t stream, uint8_t* buf, size_t length, uint32_t* flags,
                                    nghttp2_data_source*, void* user) {
  return guarded<ssize_t>([&] { return self_of(user)->body(stream, buf, length, flags); });
}

// ---- the work ----

int ServerConnection::begin_headers(const nghttp2_frame& frame) {
  block_bytes_ = 0;  // every header block is measured, whatever becomes of its stream
  if (frame.hd.type != NGHTTP2_HEADERS || frame.headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  if (calls_.size() >= kMaxStreams) {
    last_library_error_ = "more than " + std::to_string(kMaxStreams) + " concurrent streams";
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, frame.hd.stream_id, NGHTTP2_REFUSED_STREAM);
    return 0;
  }
  if (!ledger_.may_open_call(peer_, kubelet())) {
    last_library_error_ = "peer uid " + std::to_string(peer_.uid) + " holds " +
                          std::to_string(PeerLedger::kMaxCallsPerPeer) + " calls on every socket together";
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, frame.hd.stream_id, NGHTTP2_REFUSED_STREAM);
    return 0;
  }
  auto call = std::make_unique<Call>();
  call->id = frame.hd.stream_id;
  call->seq = next_call_seq_++;
  calls_[call->id] = std::move(call);
  ledger_.call_opened(peer_);
  return 0;
}

int ServerConnection::header_field(const nghttp2_frame& frame, std::string_view name, std::string_view value) {
  // An HPACK bomb: a small block that decodes to megabytes. Decoding the rest would cost the one
  // serving thread what every other client waits for, so the connection ends here. Counted before
  // anything else: trailers, a refused or reset stream's block and the rest of a malformed block
  // cost the same to decode (issue 39).
  block_bytes_ += name.size() + value.size() + 32;
  if (block_bytes_ > kMaxHeaderListBytes) {
    // The GOAWAY names the stream before this one as the last processed: the client may retry it.
    terminate(NGHTTP2_ENHANCE_YOUR_CALM, "header list too large",
              "a header block decodes to more than " + std::to_string(kMaxHeaderListBytes) +
                  " bytes (SETTINGS_MAX_HEADER_LIST_SIZE)",
              std::max(0, frame.hd.stream_id - 2));
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  Call* call = find(frame.hd.stream_id);
  // Trailers a client sends are not read: gRPC requests carry nothing there.
  if (!call || call->refused || frame.hd.type != NGHTTP2_HEADERS || frame.headers.cat != NGHTTP2_HCAT_REQUEST)
    return 0;
  if (!call->head.add(name, value)) reset(*call, NGHTTP2_PROTOCOL_ERROR, *call->head.problem());
  return 0;
}

void ServerConnection::data_chunk(int32_t stream, std::string_view data) {
  Call* call = find(stream);
  // Unary and server-streaming calls take one message; a refused or answered call reads no more.
  if (!call || call->dispatched || call->refused || call->responded) return;
  bool over_process = budget_.used + data.size() > budget_.process && buffered_ + data.size() > budget_.floor;
  if (buffered_ + data.size() > budget_.per_connection || over_process)
    return refuse(*call, {Code::ResourceExhausted, "the server holds too much unread request data; retry later"});
  call->read_error = call->reader.feed(data);
  size_t now = call->reader.buffered();
  buffered_ += now - std::min(now, call->charged);
  budget_.used += now - std::min(now, call->charged);
  call->charged = std::max(now, call->charged);
  budget_.peak = std::max(budget_.peak, budget_.used);
  if (!call->read_error.ok())
    return refuse(*call, call->read_error, call->read_error.code == Code::Unimplemented);
  if (call->reader.complete() > 1 || (call->reader.complete() == 1 && call->reader.in_message()))
    return refuse(*call, {Code::Unimplemented, call->head.head().path + " takes exactly one request message"});
}

void ServerConnection::frame_recv(const nghttp2_frame& frame) {
  if (frame.hd.type == NGHTTP2_SETTINGS && !(frame.hd.flags & NGHTTP2_FLAG_ACK)) handshaken_ = true;
  if (frame.hd.type != NGHTTP2_HEADERS && frame.hd.type != NGHTTP2_DATA) return;
  Call* call = find(frame.hd.stream_id);
  if (!call) return;
  if (frame.hd.type == NGHTTP2_HEADERS && frame.headers.cat == NGHTTP2_HCAT_REQUEST) end_of_headers(*call);
  if ((frame.hd.flags & NGHTTP2_FLAG_END_STREAM) && !call->dispatched && !call->refused) dispatch(*call);
}

void ServerConnection::stream_closed(int32_t stream) {
  auto it = calls_.find(stream);
  if (it == calls_.end()) return;
  auto call = std::move(it->second);
  calls_.erase(it);
  ledger_.call_closed(peer_);
  release_input(*call);
  set_pinned(*call, false);
  call->end();
  if (call->stream) call->stream->mark_ended();
}

void ServerConnection::frame_sent(const nghttp2_frame& frame) {
  if (frame.hd.type == NGHTTP2_HEADERS && (frame.hd.flags & NGHTTP2_FLAG_END_STREAM)) {
    // Only now: a RST_STREAM submitted with the response would go out first and drop it.
    Call* call = find(frame.hd.stream_id);
    if (call && call->stop_sender && nghttp2_session_get_stream_remote_close(session_, call->id) == 0)
      nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, call->id, NGHTTP2_NO_ERROR);
    return;
  }
  uint32_t code = NGHTTP2_NO_ERROR;
  if (frame.hd.type == NGHTTP2_RST_STREAM) code = frame.rst_stream.error_code;
  if (frame.hd.type == NGHTTP2_GOAWAY) code = frame.goaway.error_code;
  if (code == NGHTTP2_NO_ERROR) return;
  std::string library_error = std::exchange(last_library_error_, {});
  if (frame.hd.type == NGHTTP2_GOAWAY) {
    if (!terminated_) record({ErrorScope::Connection, code, "connection error", library_error, {}, {}});
    return;
  }
  Call* call = find(frame.hd.stream_id);
  HeadProblem cause = call && call->reset_cause ? *call->reset_cause : HeadProblem{"stream error", library_error};
  std::string_view method = call ? std::string_view(call->head.head().path) : std::string_view();
  std::string_view authority = call ? std::string_view(call->head.head().authority) : std::string_view();
  record({ErrorScope::Stream, code, cause.kind, cause.detail, method, authority});
}

void ServerConnection::end_of_headers(Call& call) {
  if (call.refused) return;
  if (!call.head.finish()) return reset(call, NGHTTP2_PROTOCOL_ERROR, *call.head.problem());
  if (auto timeout = parse_timeout(call.head.head().timeout)) call.deadline = Clock::now() + *timeout;
  // Refusals are answered at once, not after the client has sent its whole request; what it
  // still sends is dropped unread (no RST_STREAM: gRPC C++ clients then report INTERNAL instead
  // of the status we sent).
  if (auto refusal = grpc_refusal(call.head.head()))
    return respond_trailers_only(call, refusal->status, refusal->http_status, refusal->advertise_identity_encoding);
  call.method = service_->find(call.head.head().path);
  if (!call.method)
    return respond_trailers_only(call, {Code::Unimplemented, "unknown method " + printable(call.head.head().path)});
}

void ServerConnection::reset(Call& call, uint32_t code, const HeadProblem& problem) {
  if (call.refused) return;
  call.refused = true;
  call.reset_cause = problem;
  release_input(call);
  nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, call.id, code);
}

void ServerConnection::refuse(Call& call, const RpcStatus& status, bool advertise_identity_encoding) {
  respond_trailers_only(call, status, "200", advertise_identity_encoding);
  call.refused = true;
  release_input(call);
  // RFC 9113 §8.1: after a complete response, RST_STREAM(NO_ERROR) asks the client to stop sending
  // (frame_sent submits it once the response has left).
  call.stop_sender = true;
}

void ServerConnection::release_input(Call& call) {
  buffered_ -= std::min(buffered_, call.charged);
  budget_.used -= std::min(budget_.used, call.charged);
  call.charged = 0;
  call.reader = MessageReader();
}

void ServerConnection::set_pinned(Call& call, bool pinned) {
  if (call.pinned == pinned || !call.body) return;
  call.pinned = pinned;
  if (pinned) budget_.pinned += call.body->size();
  else budget_.pinned -= std::min(budget_.pinned, call.body->size());
}

void ServerConnection::dispatch(Call& call) {
  call.dispatched = true;
  const Service::Method* method = call.method;
  if (!method) return;  // end_of_headers answered already
  const std::string& path = call.head.head().path;
  if (!call.read_error.ok()) return respond_trailers_only(call, call.read_error);
  auto request = call.reader.next();
  bool cut_off = call.reader.in_message();
  bool one_message = request && call.reader.complete() == 0 && !cut_off;
  release_input(call);
  if (cut_off) return respond_trailers_only(call, {Code::Internal, "the request ended inside a gRPC message"});
  if (!one_message) return respond_trailers_only(call, {Code::Unimplemented, path + " takes exactly one request message"});
  try {
    if (method->unary) {
      call.ended = std::make_shared<std::atomic<bool>>(false);
      method->unary(*request, Responder(mailbox_, id_, call.id, call.ended));
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

void ServerConnection::respond_trailers_only(Call& call, const RpcStatus& status, const char* http_status,
                                             bool advertise_identity_encoding) {
  if (call.responded) return;
  call.responded = call.trailers_submitted = true;
  if (!call.dispatched) call.refused = true;  // answered before the request ended: the rest is not read
  std::string st = http_status, type = "application/grpc", code = std::to_string(static_cast<int>(status.code)),
              message = bounded_message(status.message), identity = "identity";
  std::vector<nghttp2_nv> nva = {header(":status", st), header("content-type", type), header("grpc-status", code)};
  if (!message.empty()) nva.push_back(header("grpc-message", message));
  if (advertise_identity_encoding) nva.push_back(header("grpc-accept-encoding", identity));
  if (nghttp2_submit_response(session_, call.id, nva.data(), nva.size(), nullptr) != 0)
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, call.id, NGHTTP2_INTERNAL_ERROR);
}

void ServerConnection::respond_with_body(Call& call) {
  call.responded = true;
  std::string st = "200", type = "application/grpc";
  nghttp2_nv nva[] = {header(":status", st), header("content-type", type)};
  nghttp2_data_provider provider{};
  provider.read_callback = &ServerConnection::read_body;
  if (nghttp2_submit_response(session_, call.id, nva, 2, &provider) != 0)
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, call.id, NGHTTP2_INTERNAL_ERROR);
}

void ServerConnection::submit_trailers(Call& call) {
  call.trailers_submitted = true;
  std::string code = std::to_string(static_cast<int>(call.final_status.code)),
              message = bounded_message(call.final_status.message);
  std::vector<nghttp2_nv> nva = {header("grpc-status", code)};
  if (!message.empty()) nva.push_back(header("grpc-message", message));
  if (nghttp2_submit_trailer(session_, call.id, nva.data(), nva.size()) != 0)
    nghttp2_submit_rst_stream(session_, NGHTTP2_FLAG_NONE, call.id, NGHTTP2_INTERNAL_ERROR);
}

ssize_t ServerConnection::body(int32_t stream, uint8_t* buf, size_t length, uint32_t* flags) {
  Call* call = find(stream);
  if (!call) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  size_t n = 0;
  while (n < length) {
    if (!call->has_output()) {
      set_pinned(*call, false);
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
  submit_trailers(*call);
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
    // A newer message while one is still being written: the peer reads slowly or not at all, and
    // the old message stays pinned until it does. Past the process-wide bound, the oldest such
    // stream of this connection is reset (the kubelet reconnects and gets the newest list).
    if (call->has_output() && !call->pinned) {
      set_pinned(*call, true);
      if (budget_.pinned > budget_.pinned_limit) {
        Call* oldest = nullptr;
        for (auto& [id, c] : calls_)
          if (c->pinned && (!oldest || c->seq < oldest->seq)) oldest = c.get();
        if (oldest) {
          set_pinned(*oldest, false);
          reset(*oldest, NGHTTP2_CANCEL,
                {"stalled stream", "a reader that does not read holds superseded messages past the bound"});
          if (oldest == call) return;
        }
      }
    }
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
