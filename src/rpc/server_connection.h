#pragma once
// One accepted HTTP/2 connection of the gRPC server: its nghttp2 session and its calls. Used only
// on the server's thread. Output is produced a frame at a time and only while the socket takes
// it, so a peer that stops reading holds at most one frame here (and its streams' two messages).
//
// What a peer can make it hold is bounded (issue 27): one request message per call, the input a
// connection and the whole process buffer (InputBudget), the decoded size of a header block, the
// streams of one connection, and the bytes that stalled ListAndWatch streams pin. No callback lets
// an exception into nghttp2 (C code): a failure costs its connection only.
#include <nghttp2/nghttp2.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>

#include "core/unique_fd.h"
#include "rpc/admission.h"
#include "rpc/framing.h"
#include "rpc/h2_io.h"
#include "rpc/request_head.h"
#include "rpc/server.h"
#include "rpc/transport_log.h"

namespace kgpu::rpc {

// What every connection of one server may hold at once (ServerLimits), and holds now; shared on
// the server's thread.
struct InputBudget {
  size_t per_connection = ServerLimits{}.connection_input;
  size_t process = ServerLimits{}.process_input;
  // A connection holding less than this is admitted whatever the process holds: an attacker who
  // fills the process bound must not starve the kubelet's small requests (Allocate is a few KiB).
  size_t floor = ServerLimits{}.input_floor;
  size_t pinned_limit = ServerLimits{}.stalled_output;
  size_t used = 0;
  size_t pinned = 0;
  size_t peak = 0;  // the most `used` reached since memory was last handed back (Server trims)
  // A request whose HEADERS arrived but whose END_STREAM did not within this is reset (CANCEL),
  // grpc-timeout or not: the kubelet sends a request at once, and a half-open one must not hold
  // its slot (issue 39).
  std::chrono::milliseconds unfinished_request = ServerLimits{}.unfinished_request;
};

class ServerConnection {
 public:
  static constexpr size_t kMaxStreams = 128;  // concurrent streams; more are refused (REFUSED_STREAM)
  static constexpr size_t kMaxStatusMessage = 1024;  // bytes of a grpc-message before it is cut

  // `log`, `budget` and `ledger` outlive the connection (the server owns them).
  ServerConnection(uint64_t id, UniqueFd fd, std::shared_ptr<const Service> service, std::shared_ptr<Mailbox> mailbox,
                   TransportLog& log, InputBudget& budget, PeerLedger& ledger);
  ~ServerConnection();  // ends every open stream
  ServerConnection(const ServerConnection&) = delete;
  ServerConnection& operator=(const ServerConnection&) = delete;

  bool valid() const { return session_ != nullptr; }
  int fd() const { return fd_.get(); }
  // Reads what the socket has; false: the connection is over (EOF, error, protocol violation; a
  // GOAWAY is sent first where the socket takes it).
  bool on_readable();
  // Writes what nghttp2 has to send, as far as the socket takes it; false: the connection is over.
  bool flush();
  bool wants_write() const { return wants_write_; }

  // The client preface and its SETTINGS arrived: the connection is a working one.
  bool handshaken() const { return handshaken_; }
  // Calls open (a ListAndWatch stream among them, for the kubelet's own connection).
  size_t open_calls() const { return calls_.size(); }
  Clock::time_point accepted_at() const { return accepted_at_; }
  const Peer& peer() const { return peer_; }
  // The peer owns kubelet.sock (as far as the server knows now: it learns that at registration).
  bool kubelet() const { return ledger_.is_kubelet(peer_, accepted_at_); }
  // When its oldest request still arriving (HEADERS in, END_STREAM not) began; none: no such call.
  std::optional<Clock::time_point> stalled_since() const;
  // Server-streaming calls open (ListAndWatch).
  size_t open_streams() const;
  // The earliest moment expire() has something to do: the handshake deadline, a call's
  // grpc-timeout, a request that has not ended in time.
  std::optional<Clock::time_point> next_deadline() const;
  // Ends what is past its deadline; false: the connection is over (no handshake in time).
  // An unfinished request past its time is reset (CANCEL).
  bool expire(Clock::time_point now);

  void complete_unary(int32_t stream, const RpcStatus& status, std::string message);
  void kick_stream(int32_t stream);

  static constexpr std::chrono::seconds kHandshakeDeadline{5};

 private:
  struct Call;
  static int on_begin_headers(nghttp2_session*, const nghttp2_frame*, void*);
  static int on_header(nghttp2_session*, const nghttp2_frame*, const uint8_t*, size_t, const uint8_t*, size_t, uint8_t,
                       void*);
  static int on_data_chunk(nghttp2_session*, uint8_t, int32_t, const uint8_t*, size_t, void*);
  static int on_frame_recv(nghttp2_session*, const nghttp2_frame*, void*);
  static int on_stream_close(nghttp2_session*, int32_t, uint32_t, void*);
  static int on_frame_send(nghttp2_session*, const nghttp2_frame*, void*);
  static int on_frame_not_send(nghttp2_session*, const nghttp2_frame*, int, void*);
  static int on_invalid_frame_recv(nghttp2_session*, const nghttp2_frame*, int, void*);
  static ssize_t read_body(nghttp2_session*, int32_t, uint8_t*, size_t, uint32_t*, nghttp2_data_source*, void*);

  int begin_headers(const nghttp2_frame& frame);
  int header_field(const nghttp2_frame& frame, std::string_view name, std::string_view value);
  void data_chunk(int32_t stream, std::string_view data);
  void frame_recv(const nghttp2_frame& frame);
  void stream_closed(int32_t stream);
  void frame_sent(const nghttp2_frame& frame);
  ssize_t body(int32_t stream, uint8_t* buf, size_t length, uint32_t* flags);

  Call* find(int32_t stream);
  void end_of_headers(Call& call);
  void reset(Call& call, uint32_t code, const HeadProblem& problem);
  void record(const TransportError& error) { log_.record(peer_, kubelet(), error); }
  // Answers a request before it is complete and asks the client to stop sending it.
  void refuse(Call& call, const RpcStatus& status, bool advertise_identity_encoding = false);
  void dispatch(Call& call);
  void release_input(Call& call);
  void set_pinned(Call& call, bool pinned);
  void respond_trailers_only(Call& call, const RpcStatus& status, const char* http_status = "200",
                             bool advertise_identity_encoding = false);
  void respond_with_body(Call& call);
  void submit_trailers(Call& call);
  // Ends the connection at once with GOAWAY(code): a peer breaking the protocol or a bound.
  // `last_stream`: the last stream the GOAWAY says was processed (default: nghttp2's own count).
  void terminate(uint32_t code, std::string_view cause, std::string_view detail,
                 std::optional<int32_t> last_stream = std::nullopt);

  uint64_t id_;
  UniqueFd fd_;
  Peer peer_;
  TransportLog& log_;
  InputBudget& budget_;
  PeerLedger& ledger_;
  size_t block_bytes_ = 0;  // decoded size of the header block being read, whatever its stream
  Clock::time_point accepted_at_ = Clock::now();
  bool handshaken_ = false;
  bool terminated_ = false;         // GOAWAY submitted and logged: the rest is not read
  std::string last_library_error_;  // nghttp2's reason for the error it answers next
  size_t buffered_ = 0;             // request bytes held by this connection's calls
  uint64_t next_call_seq_ = 0;      // opening order, to find the oldest stalled stream
  std::shared_ptr<const Service> service_;
  std::shared_ptr<Mailbox> mailbox_;
  nghttp2_session* session_ = nullptr;
  std::unordered_map<int32_t, std::unique_ptr<Call>> calls_;
  PendingOutput pending_out_;
  bool wants_write_ = false;
};

}  // namespace kgpu::rpc
