#pragma once
// A gRPC server (HTTP/2 through nghttp2) for unary and server-streaming methods on unix sockets.
// One thread serves every socket: an epoll loop over the listening sockets, their connections and
// an eventfd for work posted from other threads. It never wakes up on its own (no timers), so an
// idle daemon costs nothing; handlers run on that thread, so they must be quick, or keep their
// Responder and answer later from any thread.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "core/result.h"
#include "core/unique_fd.h"
#include "rpc/status.h"
#include "rpc/transport_log.h"

namespace kgpu::rpc {

class Mailbox;

// Completes one unary call, once (later calls do nothing); any thread. A call whose peer left, or
// whose server stopped, is completed into the void.
class Responder {
 public:
  // `ended`: set by the server's thread once the call is over (see cancelled()); none: never.
  Responder(std::shared_ptr<Mailbox> mailbox, uint64_t connection, int32_t stream,
            std::shared_ptr<const std::atomic<bool>> ended = {});
  void reply(std::string message) const;  // OK with this (serialized) message
  void fail(RpcStatus status) const;      // a non-OK status
  // True once nobody waits for this answer any more: the call ended before it was given (the peer
  // reset the stream or closed its connection, the call's grpc-timeout passed and the server
  // answered DEADLINE_EXCEEDED, or the server stopped). Any thread; one atomic load, so a handler
  // may ask it before each piece of work it could skip.
  bool cancelled() const;

 private:
  struct Shared;
  std::shared_ptr<Shared> shared_;
};

// The server's side of one server-streaming call; thread-safe. Every message is a full state
// (ListAndWatch): a message queued while another is still being written replaces the one queued
// before it, so a slow reader costs at most two messages of memory and never blocks the sender.
class ServerStream {
 public:
  ServerStream(std::shared_ptr<Mailbox> mailbox, uint64_t connection, int32_t stream);

  // false when the stream has ended.
  bool send_latest(std::shared_ptr<const std::string> message);
  // Ends the stream with `status` after the message being written (a queued one is dropped).
  void finish(RpcStatus status = {});
  bool ended() const;
  // Runs once when the stream has ended (peer cancelled, finished, connection closed or server
  // stopped), on the server's thread; at once on the caller's thread if it has already ended.
  void on_end(std::function<void()> callback);

  // For the server's thread.
  struct Next {
    std::shared_ptr<const std::string> message;  // null: nothing queued
    bool finish = false;
    RpcStatus status;
  };
  Next take_next();
  void mark_ended();

 private:
  void kick();
  std::shared_ptr<Mailbox> mailbox_;
  uint64_t connection_;
  int32_t stream_;
  mutable std::mutex mu_;
  std::shared_ptr<const std::string> queued_;
  bool finish_ = false;
  RpcStatus status_;
  bool ended_ = false;
  bool kicked_ = false;  // a kick is posted and not yet taken
  std::function<void()> on_end_;
};

using UnaryHandler = std::function<void(std::string_view request, Responder responder)>;
using StreamHandler = std::function<void(std::string_view request, std::shared_ptr<ServerStream> stream)>;

// The methods served on one socket, by HTTP/2 path ("/v1beta1.DevicePlugin/Allocate").
class Service {
 public:
  void unary(std::string path, UnaryHandler handler) { methods_[std::move(path)] = Method{std::move(handler), {}}; }
  void server_streaming(std::string path, StreamHandler handler) {
    methods_[std::move(path)] = Method{{}, std::move(handler)};
  }
  struct Method {
    UnaryHandler unary;
    StreamHandler streaming;
  };
  const Method* find(std::string_view path) const {
    auto it = methods_.find(std::string(path));
    return it == methods_.end() ? nullptr : &it->second;
  }

 private:
  std::map<std::string, Method> methods_;
};

// A listening unix socket at `path` (non-blocking, close-on-exec), with the exact reason when
// it cannot be made.
Result<UniqueFd> listen_unix(const std::string& path, int backlog = 64);

// What all the peers of one server may make it hold (docs/operations.md §7). The defaults are the
// daemon's; tests lower them.
struct ServerLimits {
  size_t connection_input = 16u << 20;  // request bytes one connection buffers
  size_t process_input = 64u << 20;     // request bytes every connection buffers together
  size_t input_floor = 256u << 10;      // a connection holding less is admitted past process_input
  size_t stalled_output = 64u << 20;    // superseded stream messages still being written, together
  // A request (HEADERS without END_STREAM) not ended by then is reset, so that no call holds a
  // connection by never finishing its request.
  std::chrono::milliseconds unfinished_request{10000};
};

class Server {
 public:
  // Starts the serving thread. `on_failure` (optional) runs on that thread if it ever ends by
  // itself (an error it cannot serve past): every socket is then unserved, and the owner should
  // exit so the plugin is restarted.
  static Result<std::unique_ptr<Server>> start(std::function<void(const std::string&)> on_failure = {},
                                               ServerLimits limits = {});
  ~Server();  // stop()
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Serves `service` on an already listening socket; returns an id for close(). Any thread.
  Result<uint64_t> serve(UniqueFd listening, std::shared_ptr<const Service> service);
  // Stops accepting on that socket and closes its connections at once: their streams end. Any
  // thread; returns when done.
  void close(uint64_t listener);
  size_t connections(uint64_t listener) const;
  // False once the serving thread has failed (see start()); any thread.
  bool serving() const;
  // The peer that owns kubelet.sock, from SO_PEERCRED of kgpu's connection to it, learnt as a
  // registration that began at `since` connects (see admission.h): its connections are never
  // displaced and its calls are not bounded. Any thread; takes effect on the serving thread.
  void set_kubelet(const Peer& peer, std::chrono::steady_clock::time_point since);
  // ListAndWatch (server-streaming) calls the kubelet holds open on that socket now.
  size_t kubelet_streams(uint64_t listener) const;
  // Streams reset and connections closed with an error, by HTTP/2 error code; any thread.
  std::vector<TransportLog::Count> error_counts() const;
  // Closes everything and ends the thread. Idempotent.
  void stop();

  // At most this many connections per socket; a further one displaces the worst offender
  // (choose_victim in admission.h), so a full socket never locks the kubelet out.
  static constexpr size_t kMaxConnectionsPerSocket = 64;

  struct Impl;

 private:
  explicit Server(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace kgpu::rpc
