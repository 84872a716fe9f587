#include "rpc/server.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spdlog/spdlog.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <future>
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
  UniqueFd wake;  // eventfd
  std::shared_ptr<Mailbox> mailbox;
  std::thread thread;
  bool stopping = false;
  uint64_t next_id = 1;

  struct Listener {
    UniqueFd fd;
    std::shared_ptr<const Service> service;
    std::set<uint64_t> connections;
    bool warned_full = false;
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
  static constexpr uint64_t kWakeTag = 0;
  static constexpr uint64_t kListenerKind = 1ull << 56, kConnectionKind = 2ull << 56, kKindMask = 0xffull << 56;

  void run();
  void accept_on(uint64_t id);
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

Responder::Responder(std::shared_ptr<Mailbox> mailbox, uint64_t connection, int32_t stream)
    : shared_(std::make_shared<Shared>()) {
  shared_->mailbox = std::move(mailbox);
  shared_->connection = connection;
  shared_->stream = stream;
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
  if (callback) callback();
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
    if (n < 0 && errno != EINTR) {
      spdlog::error("gRPC server: epoll_wait failed: {}", std::strerror(errno));
      break;
    }
    for (int i = 0; i < n; ++i) {
      uint64_t tag = events[static_cast<size_t>(i)].data.u64;
      uint32_t what = events[static_cast<size_t>(i)].events;
      uint64_t id = tag & ~kKindMask;
      if (tag == kWakeTag) {
        eventfd_t v;
        ::eventfd_read(wake.get(), &v);
      } else if ((tag & kKindMask) == kListenerKind) {
        accept_on(id);
      } else if (auto* conn = connection(id)) {
        bool alive = true;
        if (what & (EPOLLIN | EPOLLHUP | EPOLLERR)) alive = conn->on_readable();
        if (alive) dirty.insert(id);
        else close_connection(id);
      }
    }
    // Replies, stream messages and requests posted meanwhile; each may post more.
    for (auto tasks = mailbox->take(); !tasks.empty(); tasks = mailbox->take())
      for (auto& task : tasks) task(*this);
    flush_dirty();
  }
}

void Server::Impl::flush_dirty() {
  auto ids = std::exchange(dirty, {});
  for (uint64_t id : ids) {
    auto it = connections.find(id);
    if (it == connections.end()) continue;
    if (!it->second.connection->flush()) {
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

void Server::Impl::accept_on(uint64_t id) {
  auto it = listeners.find(id);
  if (it == listeners.end()) return;
  Listener& l = it->second;
  for (;;) {
    UniqueFd fd(::accept4(l.fd.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC));
    if (!fd.valid()) return;  // EAGAIN, or a peer that left before we took it
    if (l.connections.size() >= kMaxConnectionsPerSocket) {
      if (!l.warned_full)
        spdlog::warn("gRPC server: refusing connections beyond {} on one socket", kMaxConnectionsPerSocket);
      l.warned_full = true;
      continue;  // closed at once
    }
    uint64_t cid = next_id++;
    auto conn = std::make_unique<ServerConnection>(cid, std::move(fd), l.service, mailbox);
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

Result<std::unique_ptr<Server>> Server::start() {
  auto impl = std::make_unique<Impl>();
  impl->epoll = UniqueFd(::epoll_create1(EPOLL_CLOEXEC));
  impl->wake = UniqueFd(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!impl->epoll.valid() || !impl->wake.valid())
    return Error::unavailable(std::string("gRPC server: cannot create its epoll/eventfd: ") + std::strerror(errno));
  impl->mailbox = std::make_shared<Mailbox>(impl->wake.get());
  impl->watch(impl->wake.get(), Impl::kWakeTag, EPOLLIN, EPOLL_CTL_ADD);
  Impl* raw = impl.get();
  try {
    impl->thread = std::thread([raw] {
      // Signals are for the daemon's signalfd, never for this thread.
      sigset_t all;
      ::sigfillset(&all);
      ::pthread_sigmask(SIG_BLOCK, &all, nullptr);
      name_this_thread("kgpu-rpc");  // serves every gRPC socket of the daemon
      try {
        raw->run();
      } catch (const std::exception& e) {
        spdlog::critical("gRPC server thread failed: {}", e.what());
      } catch (...) {
        spdlog::critical("gRPC server thread failed");
      }
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
    self.listeners[id] = Impl::Listener{std::move(listening), std::move(service), {}, false};
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
