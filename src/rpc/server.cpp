#include "rpc/server.h"

#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <future>
#include <optional>
#include <stdexcept>
#include <set>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/thread_name.h"
#include "rpc/mailbox.h"
#include "rpc/server_connection.h"

namespace kgpu::rpc {

// The serving thread's state. Everything but the mailbox is touched only on that thread.
struct Server::Impl {
  UniqueFd epoll;
  UniqueFd wake;   // eventfd
  UniqueFd timer;  // timerfd: armed only while a deadline is pending (see arm_timer)
  std::shared_ptr<Mailbox> mailbox;
  TransportLog log;  // written on the serving thread; counts read from any thread
  InputBudget budget;
  PeerLedger ledger;
  std::thread thread;
  bool stopping = false;
  std::atomic<bool> dead{false};  // the loop ended without stop(): nothing is served any more
  std::function<void(const std::string&)> on_failure;
  uint64_t next_id = 1;
  std::optional<Clock::time_point> timer_at;  // what `timer` is armed for

  struct Listener {
    UniqueFd fd;
    std::shared_ptr<const Service> service;
    std::set<uint64_t> connections;
    std::optional<Clock::time_point> warned_full_at;  // displacing is logged at most once a minute
    // Out of file descriptors (EMFILE...): accepting pauses until then, so a listening socket
    // that stays readable does not spin the loop.
    std::optional<Clock::time_point> paused_until;
    std::chrono::milliseconds pause{100};
    bool accept_failing = false;  // logged once per episode
  };
  std::unordered_map<uint64_t, Listener> listeners;
  struct Open {
    uint64_t listener;
    std::unique_ptr<ServerConnection> connection;
    bool watching_out = false;
  };
  std::unordered_map<uint64_t, Open> connections;
  std::set<uint64_t> dirty;  // connections with output to produce

  // epoll tags: the kind in the top byte, the id below.
  static constexpr uint64_t kWakeTag = 0, kTimerTag = 1;
  static constexpr uint64_t kListenerKind = 1ull << 56, kConnectionKind = 2ull << 56, kKindMask = 0xffull << 56;

  void run();
  void serve_events(const epoll_event* events, int n);
  void run_tasks();
  void on_timer();
  void arm_timer();
  void give_back_memory();
  void accept_on(uint64_t id);
  void make_room(Listener& l);
  void pause_accepting(uint64_t id, Listener& l, int error);
  void close_connection(uint64_t id);
  void close_listener(uint64_t id);
  void flush_dirty();
  void watch(int fd, uint64_t tag, uint32_t events, int op) const {
    epoll_event ev{};
    ev.events = events;
    ev.data.u64 = tag;
    ::epoll_ctl(epoll.get(), op, fd, &ev);
  }
  ServerConnection* connection(uint64_t id) {
    auto it = connections.find(id);
    return it == connections.end() ? nullptr : it->second.connection.get();
  }
  // Runs `task` on the serving thread and waits for it (at once when already on it). False when
  // the server has stopped.
  bool run_on_loop(const std::function<void(Impl&)>& task);
};

// ---- Responder ----

struct Responder::Shared {
  std::shared_ptr<Mailbox> mailbox;
  uint64_t connection = 0;
  int32_t stream = 0;
  std::atomic<bool> done{false};
  std::shared_ptr<const std::atomic<bool>> ended;  // the connection's flag for this call

  void complete(RpcStatus status, std::string message) {
    if (done.exchange(true)) return;
    mailbox->post([c = connection, s = stream, status = std::move(status), m = std::move(message)](
                      Server::Impl& server) mutable {
      if (auto* conn = server.connection(c)) {
        conn->complete_unary(s, status, std::move(m));
        server.dirty.insert(c);
      }
    });
  }
};

Responder::Responder(std::shared_ptr<Mailbox> mailbox, uint64_t connection, int32_t stream,
                     std::shared_ptr<const std::atomic<bool>> ended)
    : shared_(std::make_shared<Shared>()) {
  shared_->mailbox = std::move(mailbox);
  shared_->connection = connection;
  shared_->stream = stream;
  shared_->ended = std::move(ended);
}

bool Responder::cancelled() const {
  return shared_->ended && shared_->ended->load(std::memory_order_acquire) && !shared_->done.load();
}

void Responder::reply(std::string message) const { shared_->complete({}, std::move(message)); }
void Responder::fail(RpcStatus status) const {
  if (status.ok()) status = {Code::Unknown, "a failure was reported without a status"};
  shared_->complete(std::move(status), {});
}

// ---- ServerStream ----

ServerStream::ServerStream(std::shared_ptr<Mailbox> mailbox, uint64_t connection, int32_t stream)
    : mailbox_(std::move(mailbox)), connection_(connection), stream_(stream) {}

bool ServerStream::send_latest(std::shared_ptr<const std::string> message) {
  {
    std::lock_guard lock(mu_);
    if (ended_ || finish_) return false;
    queued_ = std::move(message);
  }
  kick();
  return true;
}

void ServerStream::finish(RpcStatus status) {
  {
    std::lock_guard lock(mu_);
    if (ended_ || finish_) return;
    finish_ = true;
    status_ = std::move(status);
    queued_.reset();
  }
  kick();
}

bool ServerStream::ended() const {
  std::lock_guard lock(mu_);
  return ended_;
}

void ServerStream::on_end(std::function<void()> callback) {
  {
    std::lock_guard lock(mu_);
    if (!ended_) {
      on_end_ = std::move(callback);
      return;
    }
  }
  callback();
}

ServerStream::Next ServerStream::take_next() {
  std::lock_guard lock(mu_);
  kicked_ = false;
  if (finish_) return {nullptr, true, status_};
  return {std::move(queued_), false, {}};
}

void ServerStream::mark_ended() {
  std::function<void()> callback;
  {
    std::lock_guard lock(mu_);
    if (ended_) return;
    ended_ = true;
    queued_.reset();
    callback = std::move(on_end_);
  }
  if (!callback) return;
  // Runs inside nghttp2's callbacks or a connection's destructor: nothing may escape.
  try {
    callback();
  } catch (const std::exception& e) {
    spdlog::error("gRPC server: a stream's end handler failed: {}", e.what());
  } catch (...) {
    spdlog::error("gRPC server: a stream's end handler failed");
  }
}

void ServerStream::kick() {
  {
    std::lock_guard lock(mu_);
    if (kicked_) return;  // the serving thread has not taken the previous kick yet
    kicked_ = true;
  }
  mailbox_->post([c = connection_, s = stream_](Server::Impl& server) {
    if (auto* conn = server.connection(c)) {
      conn->kick_stream(s);
      server.dirty.insert(c);
    }
  });
}

// ---- listening sockets ----

Result<UniqueFd> listen_unix(const std::string& path, int backlog) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path))
    return Error::invalid("socket path " + path + " is " + std::to_string(path.size()) +
                          " bytes, more than a unix socket address holds (" +
                          std::to_string(sizeof(addr.sun_path) - 1) + ")");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return Error::unavailable(std::string("socket(): ") + std::strerror(errno));
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0)
    return Error::unavailable("cannot bind " + path + ": " + std::strerror(errno));
  if (::listen(fd.get(), backlog) != 0) return Error::unavailable("cannot listen on " + path + ": " + std::strerror(errno));
  return fd;
}

// ---- the serving thread ----

void Server::Impl::run() {
  mailbox->set_loop_thread(std::this_thread::get_id());
  std::array<epoll_event, 64> events;
  while (!stopping) {
    int n = ::epoll_wait(epoll.get(), events.data(), static_cast<int>(events.size()), -1);
    if (n < 0 && errno != EINTR) throw std::runtime_error(std::string("epoll_wait failed: ") + std::strerror(errno));
    serve_events(events.data(), n);
    run_tasks();
    flush_dirty();
    arm_timer();
    give_back_memory();
  }
}

// Once what peers made us buffer is all released, hand the heap's free memory back to the system:
// a burst of large requests must not keep the daemon's RSS high for good.
void Server::Impl::give_back_memory() {
  constexpr size_t kWorthTrimming = 4u << 20;
  if (budget.used != 0 || budget.peak < kWorthTrimming) return;
  budget.peak = 0;
  ::malloc_trim(0);
}

// A failure while serving one connection (bad_alloc in nghttp2's or our code) costs that
// connection only; the loop goes on for every other socket.
void Server::Impl::serve_events(const epoll_event* events, int n) {
  for (int i = 0; i < n; ++i) {
    uint64_t tag = events[i].data.u64;
    uint32_t what = events[i].events;
    uint64_t id = tag & ~kKindMask;
    if (tag == kWakeTag) {
      eventfd_t v;
      ::eventfd_read(wake.get(), &v);
    } else if (tag == kTimerTag) {
      uint64_t expirations;
      [[maybe_unused]] auto r = ::read(timer.get(), &expirations, sizeof(expirations));
      timer_at.reset();
      on_timer();
    } else if ((tag & kKindMask) == kListenerKind) {
      accept_on(id);
    } else if (auto* conn = connection(id)) {
      bool alive = false;
      try {
        alive = !(what & (EPOLLIN | EPOLLHUP | EPOLLERR)) || conn->on_readable();
      } catch (const std::exception& e) {
        spdlog::error("gRPC server: closing a connection after a failure while reading it: {}", e.what());
      } catch (...) {
        spdlog::error("gRPC server: closing a connection after a failure while reading it");
      }
      if (alive) dirty.insert(id);
      else close_connection(id);
    }
  }
}

// Replies, stream messages and requests posted meanwhile; each may post more.
void Server::Impl::run_tasks() {
  for (auto tasks = mailbox->take(); !tasks.empty(); tasks = mailbox->take())
    for (auto& task : tasks) {
      try {
        task(*this);
      } catch (const std::exception& e) {
        spdlog::error("gRPC server: a reply failed: {}", e.what());
      } catch (...) {
        spdlog::error("gRPC server: a reply failed");
      }
    }
}

void Server::Impl::on_timer() {
  auto now = Clock::now();
  for (auto& [id, l] : listeners)
    if (l.paused_until && *l.paused_until <= now) {
      l.paused_until.reset();
      watch(l.fd.get(), kListenerKind | id, EPOLLIN, EPOLL_CTL_MOD);
      accept_on(id);
    }
  std::vector<uint64_t> expired;
  for (auto& [id, open] : connections) {
    auto next = open.connection->next_deadline();
    if (!next || *next > now) continue;
    if (open.connection->expire(now)) dirty.insert(id);
    else expired.push_back(id);
  }
  for (uint64_t id : expired) close_connection(id);
}

// The earliest deadline of any connection or paused listener; none: disarmed, so an idle server
// never wakes up.
void Server::Impl::arm_timer() {
  std::optional<Clock::time_point> next;
  auto consider = [&](std::optional<Clock::time_point> t) {
    if (t && (!next || *t < *next)) next = t;
  };
  for (const auto& [id, l] : listeners) consider(l.paused_until);
  for (const auto& [id, open] : connections) consider(open.connection->next_deadline());
  if (next == timer_at) return;
  timer_at = next;
  itimerspec spec{};
  if (next) {
    auto wait = std::max<Clock::duration>(std::chrono::nanoseconds(1), *next - Clock::now());
    auto secs = std::chrono::duration_cast<std::chrono::seconds>(wait);
    spec.it_value.tv_sec = secs.count();
    spec.it_value.tv_nsec = std::chrono::duration_cast<std::chrono::nanoseconds>(wait - secs).count();
  }
  ::timerfd_settime(timer.get(), 0, &spec, nullptr);
}

void Server::Impl::flush_dirty() {
  auto ids = std::exchange(dirty, {});
  for (uint64_t id : ids) {
    auto it = connections.find(id);
    if (it == connections.end()) continue;
    bool alive = false;
    try {
      alive = it->second.connection->flush();
    } catch (const std::exception& e) {
      spdlog::error("gRPC server: closing a connection after a failure while writing it: {}", e.what());
    } catch (...) {
      spdlog::error("gRPC server: closing a connection after a failure while writing it");
    }
    if (!alive) {
      close_connection(id);
      continue;
    }
    bool want_out = it->second.connection->wants_write();
    if (want_out != it->second.watching_out) {
      it->second.watching_out = want_out;
      watch(it->second.connection->fd(), kConnectionKind | id, EPOLLIN | (want_out ? EPOLLOUT : 0u), EPOLL_CTL_MOD);
    }
  }
}

// At the per-socket cap a new connection takes the place of the worst offender (choose_victim):
// no set of open calls can lock a newcomer out, and the kubelet's connections go last. The
// newcomer is never refused, so the kubelet always gets in (issue 39).
void Server::Impl::make_room(Listener& l) {
  if (l.connections.size() < kMaxConnectionsPerSocket) return;
  std::vector<ConnectionView> open;
  for (uint64_t cid : l.connections)
    if (auto* c = connection(cid))
      open.push_back({cid, c->peer(), c->kubelet(), c->handshaken(), c->open_calls(), c->stalled_since(),
                      c->accepted_at()});
  auto victim = choose_victim(open);
  if (!victim) return;
  auto now = Clock::now();
  if (!l.warned_full_at || now - *l.warned_full_at >= std::chrono::minutes(1)) {
    auto* c = connection(*victim);
    spdlog::warn("gRPC server: {} connections on one socket; each new one displaces the worst offender (now a "
                 "connection of peer pid {} uid {} with {} calls open); logged at most once a minute",
                 kMaxConnectionsPerSocket, c->peer().pid, c->peer().uid, c->open_calls());
    l.warned_full_at = now;
  }
  close_connection(*victim);
}

void Server::Impl::pause_accepting(uint64_t id, Listener& l, int error) {
  if (!l.accept_failing)
    spdlog::warn("gRPC server: cannot accept connections ({}); pausing accepts (100 ms doubling to 2 s) until it "
                 "can, serving the open ones",
                 std::strerror(error));
  l.accept_failing = true;
  l.paused_until = Clock::now() + l.pause;
  l.pause = std::min<std::chrono::milliseconds>(l.pause * 2, std::chrono::seconds(2));
  watch(l.fd.get(), kListenerKind | id, 0, EPOLL_CTL_MOD);
}

void Server::Impl::accept_on(uint64_t id) {
  auto it = listeners.find(id);
  if (it == listeners.end() || it->second.paused_until) return;
  Listener& l = it->second;
  for (;;) {
    UniqueFd fd(::accept4(l.fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) {
      if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) pause_accepting(id, l, errno);
      return;  // EAGAIN, or a peer that left before we took it
    }
    if (l.accept_failing) spdlog::info("gRPC server: accepting connections again");
    l.accept_failing = false;
    l.pause = std::chrono::milliseconds(100);
    make_room(l);
    uint64_t cid = next_id++;
    auto conn = std::make_unique<ServerConnection>(cid, std::move(fd), l.service, mailbox, log, budget, ledger);
    if (!conn->valid()) continue;
    watch(conn->fd(), kConnectionKind | cid, EPOLLIN, EPOLL_CTL_ADD);
    connections[cid] = Open{id, std::move(conn), false};
    l.connections.insert(cid);
    dirty.insert(cid);  // our SETTINGS go out first
  }
}

void Server::Impl::close_connection(uint64_t id) {
  auto it = connections.find(id);
  if (it == connections.end()) return;
  auto open = std::move(it->second);
  connections.erase(it);
  dirty.erase(id);
  if (auto l = listeners.find(open.listener); l != listeners.end()) l->second.connections.erase(id);
  ::epoll_ctl(epoll.get(), EPOLL_CTL_DEL, open.connection->fd(), nullptr);
  open.connection.reset();  // ends its streams
}

void Server::Impl::close_listener(uint64_t id) {
  auto it = listeners.find(id);
  if (it == listeners.end()) return;
  auto ids = it->second.connections;
  ::epoll_ctl(epoll.get(), EPOLL_CTL_DEL, it->second.fd.get(), nullptr);
  listeners.erase(it);
  for (uint64_t c : ids) {
    // What is queued (a stream's final status) goes out if the socket takes it now; never waits.
    if (auto* conn = connection(c)) conn->flush();
    close_connection(c);
  }
}

bool Server::Impl::run_on_loop(const std::function<void(Impl&)>& task) {
  if (mailbox->on_loop_thread()) {
    task(*this);
    return true;
  }
  auto done = std::make_shared<std::promise<void>>();
  auto future = done->get_future();
  if (!mailbox->post([&task, done](Impl& self) {
        task(self);
        done->set_value();
      }))
    return false;
  try {
    future.get();
    return true;
  } catch (const std::future_error&) {
    return false;  // the server stopped before the task ran
  }
}

// ---- Server ----

Server::Server(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Result<std::unique_ptr<Server>> Server::start(std::function<void(const std::string&)> on_failure,
                                             ServerLimits limits) {
  auto impl = std::make_unique<Impl>();
  impl->budget.per_connection = limits.connection_input;
  impl->budget.process = limits.process_input;
  impl->budget.floor = limits.input_floor;
  impl->budget.pinned_limit = limits.stalled_output;
  impl->budget.unfinished_request = limits.unfinished_request;
  impl->epoll = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
  impl->wake = UniqueFd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  impl->timer = UniqueFd(::timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC));
  if (!impl->epoll.valid() || !impl->wake.valid() || !impl->timer.valid())
    return Error::unavailable(std::string("gRPC server: cannot create its epoll/eventfd/timerfd: ") +
                              std::strerror(errno));
  impl->mailbox = std::make_shared<Mailbox>(impl->wake.get());
  impl->on_failure = std::move(on_failure);
  impl->watch(impl->wake.get(), Impl::kWakeTag, EPOLLIN, EPOLL_CTL_ADD);
  impl->watch(impl->timer.get(), Impl::kTimerTag, EPOLLIN, EPOLL_CTL_ADD);
  Impl* raw = impl.get();
  try {
    impl->thread = std::thread([raw] {
      // Signals are for the daemon's signalfd, never for this thread.
      sigset_t all;
      ::sigfillset(&all);
      ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
      name_this_thread("kgpu-rpc");  // serves every gRPC socket of the daemon
      std::string failure;
      try {
        raw->run();
      } catch (const std::exception& e) {
        failure = e.what();
      } catch (...) {
        failure = "unknown exception";
      }
      if (raw->stopping) return;
      // Nothing is served any more: say so, let every waiter go (run_on_loop sees a closed
      // mailbox), and let the owner end the process so the kubelet sees the plugin gone.
      raw->dead = true;
      raw->mailbox->close();
      spdlog::critical("gRPC server thread failed: {}; no socket is served any more", failure);
      if (raw->on_failure) raw->on_failure(failure);
    });
  } catch (const std::system_error& e) {
    return Error::unavailable(std::string("gRPC server: cannot start its thread: ") + e.what());
  }
  return std::unique_ptr<Server>(new Server(std::move(impl)));
}

Server::~Server() { stop(); }

Result<uint64_t> Server::serve(UniqueFd listening, std::shared_ptr<const Service> service) {
  int flags = ::fcntl(listening.get(), F_GETFL);
  if (flags < 0 || ::fcntl(listening.get(), F_SETFL, flags | O_NONBLOCK) != 0)
    return Error::unavailable(std::string("gRPC server: fcntl on the listening socket: ") + std::strerror(errno));
  uint64_t id = 0;
  bool ran = impl_->run_on_loop([&](Impl& self) {
    id = self.next_id++;
    self.watch(listening.get(), Impl::kListenerKind | id, EPOLLIN, EPOLL_CTL_ADD);
    Impl::Listener listener;
    listener.fd = std::move(listening);
    listener.service = std::move(service);
    self.listeners[id] = std::move(listener);
  });
  if (!ran) return Error::unavailable("gRPC server: stopped");
  return id;
}

void Server::close(uint64_t listener) {
  impl_->run_on_loop([listener](Impl& self) {
    self.close_listener(listener);
    self.flush_dirty();
  });
}

size_t Server::connections(uint64_t listener) const {
  size_t n = 0;
  impl_->run_on_loop([&](Impl& self) {
    auto it = self.listeners.find(listener);
    n = it == self.listeners.end() ? 0 : it->second.connections.size();
  });
  return n;
}

void Server::set_kubelet(const Peer& peer, std::chrono::steady_clock::time_point since) {
  impl_->mailbox->post([peer, since](Impl& self) { self.ledger.set_kubelet(peer, since); });
}

size_t Server::kubelet_streams(uint64_t listener) const {
  size_t n = 0;
  impl_->run_on_loop([&](Impl& self) {
    auto it = self.listeners.find(listener);
    if (it == self.listeners.end()) return;
    for (uint64_t cid : it->second.connections)
      if (auto* c = self.connection(cid); c && c->kubelet()) n += c->open_streams();
  });
  return n;
}

std::vector<TransportLog::Count> Server::error_counts() const { return impl_->log.counts(); }

bool Server::serving() const { return !impl_->dead; }

void Server::stop() {
  if (!impl_ || !impl_->thread.joinable()) return;
  impl_->run_on_loop([](Impl& self) { self.stopping = true; });
  impl_->mailbox->close();
  if (impl_->thread.get_id() == std::this_thread::get_id()) {
    impl_->thread.detach();  // stop() from a handler: the loop ends after this batch
  } else {
    impl_->thread.join();
  }
  std::vector<uint64_t> ids;
  for (auto& [id, l] : impl_->listeners) ids.push_back(id);
  for (uint64_t id : ids) impl_->close_listener(id);
}

}  // namespace kgpu::rpc
