// The transport under attack (issue 27): what a hostile or broken peer can make kgpu's gRPC server
// hold, how long it may take its slots, and what it is answered. Raw HTTP/2 through nghttp2's
// client (tests/support/raw_h2_client.h), so the peer sends exactly the frames a test wants.
#include <gtest/gtest.h>
#include <nghttp2/nghttp2.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <thread>

#include "core/unique_fd.h"
#include "rpc/server.h"
#include "rpc/server_connection.h"
#include "support/eventually.h"
#include "support/raw_h2_client.h"

namespace kgpu::rpc {
namespace {

using namespace std::chrono_literals;
using test::grpc_fields;
using test::grpc_frame;
using test::RawH2Client;

class Hardening : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = "/tmp/kgpu-hard-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++);
    std::filesystem::create_directories(dir_);
    path_ = dir_ + "/s.sock";
    auto server = Server::start({}, limits());
    ASSERT_TRUE(server) << server.error().message;
    server_ = std::move(*server);
    auto service = std::make_shared<Service>();
    service->unary("/t.S/Echo", [](std::string_view req, Responder r) { r.reply(std::string(req)); });
    service->unary("/t.S/Fail", [](std::string_view, Responder r) {
      r.fail({Code::InvalidArgument, "unknown device " + std::string(100 * 1024, 'x')});
    });
    service->server_streaming("/t.S/Throws", [](std::string_view, std::shared_ptr<ServerStream> s) {
      s->on_end([] { throw std::runtime_error("on_end failed"); });  // runs inside nghttp2's close callback
      s->send_latest(std::make_shared<std::string>("first"));
    });
    service->server_streaming("/t.S/Watch", [this](std::string_view, std::shared_ptr<ServerStream> s) {
      s->on_end([this] { ended_++; });
      s->send_latest(std::make_shared<std::string>("first"));
      std::lock_guard lock(mu_);
      streams_.push_back(std::move(s));
    });
    auto fd = listen_unix(path_);
    ASSERT_TRUE(fd) << fd.error().message;
    auto id = server_->serve(std::move(*fd), service);
    ASSERT_TRUE(id);
    listener_ = *id;
  }
  virtual ServerLimits limits() const { return {}; }
  void TearDown() override {
    server_.reset();
    std::filesystem::remove_all(dir_);
  }
  uint64_t errors(ErrorScope scope, const std::string& code) const {
    for (const auto& c : server_->error_counts())
      if (c.scope == scope && c.code == code) return c.value;
    return 0;
  }
  // A working call on a fresh connection: the server still serves.
  bool echo_works() {
    RawH2Client client(path_);
    std::string body = grpc_frame("ping");
    int32_t id = client.request(grpc_fields("/t.S/Echo"), &body);
    return client.run_until([&] { return client.stream(id).closed; }) &&
           client.stream(id).headers.count("grpc-status") && client.stream(id).headers.at("grpc-status") == "0";
  }

  static inline int counter_ = 0;
  std::string dir_, path_;
  std::unique_ptr<Server> server_;
  uint64_t listener_ = 0;
  std::atomic<int> ended_{0};
  std::mutex mu_;
  std::vector<std::shared_ptr<ServerStream>> streams_;
};

// This process as a unix socket's peer sees it.
Peer peer_of_self() { return {::getpid(), ::getuid()}; }

TEST_F(Hardening, AUnaryCallTakesOneMessageAndKeepsNoMore) {
  RawH2Client client(path_);
  std::string two = grpc_frame("a") + grpc_frame("b");
  int32_t id = client.request(grpc_fields("/t.S/Echo"), &two, /*keep_open=*/true);
  ASSERT_TRUE(client.run_until([&] { return client.stream(id).closed; }));
  EXPECT_EQ(client.stream(id).headers.at("grpc-status"), "12");  // UNIMPLEMENTED, as gRPC C++
  EXPECT_TRUE(echo_works());
}

TEST_F(Hardening, NoMessageOnAUnaryCallIsUnimplemented) {
  RawH2Client client(path_);
  int32_t id = client.request(grpc_fields("/t.S/Echo"));  // END_STREAM on HEADERS
  ASSERT_TRUE(client.run_until([&] { return client.stream(id).closed; }));
  EXPECT_EQ(client.stream(id).headers.at("grpc-status"), "12");
}

TEST_F(Hardening, BufferedRequestBytesAreBoundedPerConnection) {
  // Streams that each announce 4 MiB and send 1 MiB of it, never finishing: the connection's
  // 16 MiB bound refuses the ones past it with RESOURCE_EXHAUSTED instead of holding them.
  RawH2Client client(path_);
  std::string partial = grpc_frame(std::string(4u << 20, 'm')).substr(0, 1u << 20);
  std::vector<int32_t> ids;
  for (int i = 0; i < 20; ++i) ids.push_back(client.request(grpc_fields("/t.S/Echo"), &partial, true));
  ASSERT_TRUE(client.run_until([&] {
    return std::any_of(ids.begin(), ids.end(), [&](int32_t id) { return client.stream(id).closed; });
  }, 20s));
  int exhausted = 0;
  for (int32_t id : ids)
    if (client.stream(id).headers.count("grpc-status") && client.stream(id).headers.at("grpc-status") == "8")
      exhausted++;
  EXPECT_GE(exhausted, 1);
  EXPECT_LE(exhausted, 16);  // at least 4 fit under the bound (capacity counts, up to 2x the bytes)
  EXPECT_TRUE(echo_works());
}

TEST_F(Hardening, AHeaderBlockDecodingPastTheLimitEndsItsConnectionOnly) {
  RawH2Client client(path_);
  auto fields = grpc_fields("/t.S/Echo");
  fields.push_back({"x-bomb", std::string(20 * 1024, 'b')});
  client.request(fields);
  ASSERT_TRUE(client.run_until([&] { return client.goaway(); }));
  EXPECT_EQ(client.goaway_code(), static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
  EXPECT_EQ(errors(ErrorScope::Connection, "ENHANCE_YOUR_CALM"), 1u);
  EXPECT_TRUE(echo_works());
}

TEST_F(Hardening, LongStatusMessagesAreCutAndStillSent) {
  RawH2Client client(path_);
  std::string body = grpc_frame("");
  int32_t id = client.request(grpc_fields("/t.S/Fail"), &body);
  ASSERT_TRUE(client.run_until([&] { return client.stream(id).closed; }));
  const auto& headers = client.stream(id).headers;
  ASSERT_EQ(headers.at("grpc-status"), "3");
  EXPECT_LT(headers.at("grpc-message").size(), 2048u);
  EXPECT_NE(headers.at("grpc-message").find("bytes)"), std::string::npos);
}

TEST_F(Hardening, StreamsBeyondTheLimitAreRefusedNotTheConnection) {
  RawH2Client client(path_);
  std::string partial = grpc_frame("x").substr(0, 3);  // an unfinished message keeps each stream open
  std::vector<int32_t> ids;
  for (size_t i = 0; i <= ServerConnection::kMaxStreams; ++i)
    ids.push_back(client.request(grpc_fields("/t.S/Echo"), &partial, true));
  ASSERT_TRUE(client.run_until([&] { return client.stream(ids.back()).closed; }));
  EXPECT_EQ(client.stream(ids.back()).close_code, static_cast<uint32_t>(NGHTTP2_REFUSED_STREAM));
  EXPECT_FALSE(client.goaway());
  EXPECT_FALSE(client.stream(ids.front()).closed);
}

TEST_F(Hardening, CompressionWeDoNotSpeakIsUnimplementedWithTheEncodingWeAccept) {
  RawH2Client client(path_);
  auto gzip = grpc_fields("/t.S/Echo");
  gzip.push_back({"grpc-encoding", "gzip"});
  std::string body = grpc_frame("z");
  int32_t a = client.request(gzip, &body);
  std::string compressed = grpc_frame("z");
  compressed[0] = 1;  // the compressed flag, with no grpc-encoding agreed
  int32_t b = client.request(grpc_fields("/t.S/Echo"), &compressed);
  ASSERT_TRUE(client.run_until([&] { return client.stream(a).closed && client.stream(b).closed; }));
  for (int32_t id : {a, b}) {
    EXPECT_EQ(client.stream(id).headers.at("grpc-status"), "12") << id;
    EXPECT_EQ(client.stream(id).headers.at("grpc-accept-encoding"), "identity") << id;
  }
}

TEST_F(Hardening, MethodAndTeAreChecked) {
  RawH2Client client(path_);
  auto get = grpc_fields("/t.S/Echo");
  get[0].second = "GET";
  auto no_te = grpc_fields("/t.S/Echo");
  no_te.pop_back();
  std::string body = grpc_frame("x");
  int32_t a = client.request(get, &body), b = client.request(no_te, &body);
  ASSERT_TRUE(client.run_until([&] { return client.stream(a).closed && client.stream(b).closed; }));
  EXPECT_EQ(client.stream(a).headers.at(":status"), "405");
  EXPECT_EQ(client.stream(b).headers.at(":status"), "400");
  EXPECT_NE(client.stream(b).headers.at("grpc-status"), "0");
}

TEST_F(Hardening, GrpcTimeoutEndsAServerStream) {
  RawH2Client client(path_);
  auto fields = grpc_fields("/t.S/Watch");
  fields.push_back({"grpc-timeout", "100m"});
  std::string body = grpc_frame("");
  int32_t id = client.request(fields, &body);
  ASSERT_TRUE(client.run_until([&] { return client.stream(id).closed; }, 5s));
  EXPECT_EQ(client.stream(id).headers.at("grpc-status"), "4");  // DEADLINE_EXCEEDED
  EXPECT_TRUE(test::eventually([&] { return ended_.load() == 1; }));
}

TEST_F(Hardening, IdleConnectionsNeitherLockTheKubeletOutNorStay) {
  std::vector<UniqueFd> idle;
  for (size_t i = 0; i < Server::kMaxConnectionsPerSocket; ++i) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
    ASSERT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    idle.push_back(std::move(fd));
  }
  // The cap is full of connections that never spoke: a working client still gets in.
  EXPECT_TRUE(echo_works());
  // And the silent ones are closed after the handshake deadline.
  auto closed = [&](const UniqueFd& fd) {
    char c;
    return ::recv(fd.get(), &c, 1, MSG_DONTWAIT) == 0;
  };
  EXPECT_TRUE(test::eventually([&] { return closed(idle.back()); }, ServerConnection::kHandshakeDeadline + 5s));
}

// Issue 39, item 1: 64 connections that each hold a call open (a ListAndWatch nobody reads past
// its first message) used to take every slot for good: a new client was closed at once. Now the
// newcomer displaces one of them.
TEST_F(Hardening, ASocketFullOfOpenCallsStillLetsANewcomerIn) {
  std::vector<std::unique_ptr<RawH2Client>> holders;
  std::string empty = grpc_frame("");
  for (size_t i = 0; i < Server::kMaxConnectionsPerSocket; ++i) {
    holders.push_back(std::make_unique<RawH2Client>(path_));
    auto& c = *holders.back();
    int32_t id = c.request(grpc_fields("/t.S/Watch"), &empty);
    ASSERT_TRUE(c.run_until([&] { return c.stream(id).headers.count(":status") > 0; })) << i;
  }
  ASSERT_EQ(server_->connections(listener_), Server::kMaxConnectionsPerSocket);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(echo_works()) << "newcomer " << i << " was locked out";
  EXPECT_LE(server_->connections(listener_), Server::kMaxConnectionsPerSocket);
}

// Issue 39, item 1: the first-list check asks for the kubelet's own ListAndWatch. A stream counts
// only once its peer is the one set_kubelet() names (here this process, by SO_PEERCRED).
TEST_F(Hardening, KubeletStreamsAreCountedOnlyForTheKubelet) {
  RawH2Client watcher(path_);
  std::string empty = grpc_frame("");
  int32_t id = watcher.request(grpc_fields("/t.S/Watch"), &empty);
  ASSERT_TRUE(watcher.run_until([&] { return watcher.stream(id).headers.count(":status") > 0; }));
  EXPECT_EQ(server_->kubelet_streams(listener_), 0u);  // not known yet: another peer's stream
  server_->set_kubelet(peer_of_self(), std::chrono::steady_clock::now());
  EXPECT_TRUE(test::eventually([&] { return server_->kubelet_streams(listener_) == 1; }));
  server_->set_kubelet({::getpid() + 1, ::getuid()}, std::chrono::steady_clock::now());
  EXPECT_TRUE(test::eventually([&] { return server_->kubelet_streams(listener_) == 0; }));
}

// Issue 39, item 3: every header block counts against the 16 KiB bound, not only a live call's
// request: trailers, the rest of a block after a malformed field, a refused stream's block.
TEST_F(Hardening, AHeaderBombInTrailersEndsTheConnection) {
  RawH2Client client(path_);
  std::string partial = grpc_frame("x").substr(0, 3);
  int32_t id = client.request(grpc_fields("/t.S/Echo"), &partial, /*keep_open=*/true);
  ASSERT_TRUE(client.send_pending());
  ASSERT_TRUE(client.trailers(id, {{"x-bomb", std::string(20 * 1024, 'b')}}));
  ASSERT_TRUE(client.run_until([&] { return client.goaway(); }));
  EXPECT_EQ(client.goaway_code(), static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
  EXPECT_TRUE(echo_works());
}

TEST_F(Hardening, AHeaderBombAfterAMalformedFieldEndsTheConnection) {
  RawH2Client client(path_);
  auto fields = grpc_fields("/t.S/Echo");
  fields.push_back({"Bad-Name", "x"});
  fields.push_back({"x-bomb", std::string(20 * 1024, 'b')});
  client.request(fields);
  ASSERT_TRUE(client.run_until([&] { return client.goaway(); }));
  EXPECT_EQ(client.goaway_code(), static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
}

TEST_F(Hardening, AHeaderBombOnARefusedStreamEndsTheConnection) {
  RawH2Client client(path_);
  std::string partial = grpc_frame("x").substr(0, 3);
  for (size_t i = 0; i < ServerConnection::kMaxStreams; ++i)
    client.request(grpc_fields("/t.S/Echo"), &partial, /*keep_open=*/true);
  auto fields = grpc_fields("/t.S/Echo");
  fields.push_back({"x-bomb", std::string(20 * 1024, 'b')});
  client.request(fields);  // beyond the limit: refused, and its block still measured
  ASSERT_TRUE(client.run_until([&] { return client.goaway(); }));
  EXPECT_EQ(client.goaway_code(), static_cast<uint32_t>(NGHTTP2_ENHANCE_YOUR_CALM));
}

class HardeningShortRequests : public Hardening {
 protected:
  ServerLimits limits() const override {
    ServerLimits l;
    l.unfinished_request = std::chrono::milliseconds(200);
    return l;
  }
};

// Issue 39, item 1: a request whose END_STREAM never comes (no grpc-timeout either) no longer
// holds its call, and so its connection, for good.
TEST_F(HardeningShortRequests, AnUnfinishedRequestIsResetInTime) {
  RawH2Client client(path_);
  std::string partial = grpc_frame("x").substr(0, 3);
  int32_t id = client.request(grpc_fields("/t.S/Echo"), &partial, /*keep_open=*/true);
  auto t0 = std::chrono::steady_clock::now();
  ASSERT_TRUE(client.run_until([&] { return client.stream(id).closed; }, 5s));
  EXPECT_EQ(client.stream(id).close_code, static_cast<uint32_t>(NGHTTP2_CANCEL));
  EXPECT_GE(std::chrono::steady_clock::now() - t0, 150ms);
  EXPECT_EQ(errors(ErrorScope::Stream, "CANCEL"), 1u);
  EXPECT_TRUE(echo_works());
}

TEST_F(Hardening, AnExceptionInAStreamsEndHandlerNeitherEscapesNorStopsTheServer) {
  {
    RawH2Client client(path_);
    std::string body = grpc_frame("");
    auto fields = grpc_fields("/t.S/Throws");
    fields.push_back({"grpc-timeout", "50m"});  // the server ends the stream: on_end runs, and throws
    int32_t id = client.request(fields, &body);
    // The handler's failure is contained where it happens: the stream still ends with its status.
    ASSERT_TRUE(client.run_until([&] { return client.stream(id).closed; }, 5s));
    EXPECT_EQ(client.stream(id).headers.at("grpc-status"), "4");
  }
  EXPECT_TRUE(server_->serving());
  EXPECT_TRUE(echo_works());
}

TEST_F(Hardening, OutOfFileDescriptorsPausesAcceptingInsteadOfSpinning) {
  rlimit saved{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &saved), 0);
  int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);  // made before descriptors run out
  ASSERT_GE(fd, 0);
  // UBSan checks a virtual call's object by writing it into a pipe, which cannot be made while
  // descriptors are out, and then reports a valid object as one with an "invalid vptr" (spdlog's
  // logger, fmt's buffer). Its type cache skips the check for types it has seen: the logger is
  // shown it here, and logging is off while no descriptor is free, so nothing is formatted then.
  spdlog::warn("test: running out of file descriptors on purpose (logging is off until they are back)");
  // The same for the server's own work: a call to its thread returns through a std::future whose
  // shared state the thread frees a moment later, a virtual call. Two round trips: the first
  // one's state is freed (and its type seen) before the second runs, so nothing new is left.
  EXPECT_EQ(server_->connections(listener_), 0u);
  EXPECT_EQ(server_->connections(listener_), 0u);
  const auto level = spdlog::get_level();
  spdlog::set_level(spdlog::level::off);
  int highest = ::dup(0);  // the lowest free descriptor: every lower one is taken
  ::close(highest);
  rlimit low = saved;
  low.rlim_cur = static_cast<rlim_t>(highest);
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  // A connection made while accept4 fails with EMFILE waits in the backlog.
  RawH2Client client(RawH2Client::connect_to(path_, fd));
  ASSERT_TRUE(client.connected());
  timespec t0{}, t1{};
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
  std::this_thread::sleep_for(300ms);  // a measuring window, not synchronisation
  ::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t1);
  // An accepted connection gets the server's SETTINGS at once, so "accepted" is read on the
  // client's socket. Not server_->connections(): its cross-thread wait runs through std::future,
  // whose virtual calls UBSan cannot check without a free descriptor (an "invalid vptr" report).
  char first_byte = 0;
  bool accepted = ::recv(fd, &first_byte, 1, MSG_PEEK | MSG_DONTWAIT) > 0;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &saved), 0);
  spdlog::set_level(level);
  EXPECT_FALSE(accepted) << "the connection was accepted although no descriptor was free";
  double cpu_ms = (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6;
  EXPECT_LT(cpu_ms, 100.0) << "the serving thread spun on a readable listening socket";
  // Accepting resumes by itself: the waiting connection is served.
  std::string body = grpc_frame("late");
  int32_t id = client.request(grpc_fields("/t.S/Echo"), &body);
  ASSERT_TRUE(client.run_until([&] { return client.stream(id).closed; }, 10s));
  EXPECT_EQ(client.stream(id).headers.at("grpc-status"), "0");
}

TEST_F(Hardening, AnUnknownMethodAndAnOversizedMessageAreAnsweredAtOnce) {
  RawH2Client client(path_);
  std::string one = grpc_frame("x");
  int32_t unknown = client.request(grpc_fields("/t.S/Nope"), &one, /*keep_open=*/true);
  std::string announced = grpc_frame(std::string(5u << 20, 'o')).substr(0, 5 + 1000);  // declares 5 MiB
  int32_t oversized = client.request(grpc_fields("/t.S/Echo"), &announced, /*keep_open=*/true);
  // Neither request has ended, yet both are answered.
  ASSERT_TRUE(client.run_until([&] {
    return client.stream(unknown).headers.count("grpc-status") && client.stream(oversized).headers.count("grpc-status");
  }));
  EXPECT_EQ(client.stream(unknown).headers.at("grpc-status"), "12");
  EXPECT_EQ(client.stream(oversized).headers.at("grpc-status"), "8");
}

// Streams whose reader reads nothing while newer lists keep coming: each pins the list it was
// writing. Past the bound the oldest is reset; the others, and the server, go on.
TEST(HardeningLimits, StalledStreamsPinningPastTheBoundAreResetOldestFirst) {
  std::string dir = "/tmp/kgpu-stall-" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  ServerLimits limits;
  limits.stalled_output = 1u << 20;
  auto server = Server::start({}, limits);
  ASSERT_TRUE(server);
  std::mutex mu;
  std::vector<std::shared_ptr<ServerStream>> streams;
  auto service = std::make_shared<Service>();
  service->server_streaming("/t.S/Watch", [&](std::string_view, std::shared_ptr<ServerStream> s) {
    s->send_latest(std::make_shared<std::string>(std::string(512u << 10, 'a')));
    std::lock_guard lock(mu);
    streams.push_back(std::move(s));
  });
  auto fd = listen_unix(dir + "/s.sock");
  ASSERT_TRUE(fd);
  ASSERT_TRUE((*server)->serve(std::move(*fd), service));
  RawH2Client client(dir + "/s.sock");  // reads the headers, then stops reading
  std::string empty = grpc_frame("");
  std::vector<int32_t> ids;
  for (int i = 0; i < 6; ++i) ids.push_back(client.request(grpc_fields("/t.S/Watch"), &empty));
  ASSERT_TRUE(client.run_until([&] {
    std::lock_guard lock(mu);
    return streams.size() == ids.size();
  }));
  // Every stream gets a newer list while the first (512 KiB, past the 64 KiB window) is unread.
  for (int round = 0; round < 3; ++round) {
    std::lock_guard lock(mu);
    for (auto& s : streams) s->send_latest(std::make_shared<std::string>(std::string(512u << 10, 'b')));
  }
  auto ended = [&] {
    std::lock_guard lock(mu);
    return std::count_if(streams.begin(), streams.end(), [](const auto& s) { return s->ended(); });
  };
  EXPECT_TRUE(test::eventually([&] { return ended() >= 1; }, 10s));
  EXPECT_LT(ended(), static_cast<long>(ids.size()));  // not every stream: only past the bound
  {
    std::lock_guard lock(mu);
    EXPECT_TRUE(streams.front()->ended()) << "the oldest stalled stream goes first";
  }
  (*server).reset();
  std::filesystem::remove_all(dir);
}

TEST_F(Hardening, APingFloodEndsInGoawayNotABareClose) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path_.c_str(), sizeof(addr.sun_path) - 1);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  ASSERT_EQ(::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
  std::string wire(NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN);
  wire += std::string("\0\0\0\x04\0\0\0\0\0", 9);  // empty SETTINGS
  for (int i = 0; i < 1500; ++i) wire += std::string("\0\0\x08\x06\0\0\0\0\0", 9) + std::string(8, 'p');
  ASSERT_EQ(::send(fd.get(), wire.data(), wire.size(), MSG_NOSIGNAL), static_cast<ssize_t>(wire.size()));
  // Read everything until EOF, then look for a GOAWAY frame among the frames.
  std::string got;
  ASSERT_TRUE(test::eventually([&] {
    char buf[65536];
    ssize_t n = ::recv(fd.get(), buf, sizeof(buf), MSG_DONTWAIT);
    if (n > 0) got.append(buf, static_cast<size_t>(n));
    return n == 0;
  }, 10s));
  bool goaway = false;
  for (size_t off = 0; off + 9 <= got.size();) {
    auto u = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(got[off + i])); };
    size_t length = (u(0) << 16) | (u(1) << 8) | u(2);
    if (u(3) == NGHTTP2_GOAWAY) goaway = true;
    off += 9 + length;
  }
  EXPECT_TRUE(goaway);
  EXPECT_TRUE(echo_works());
}

}  // namespace
}  // namespace kgpu::rpc
