// Fuzz target: what a peer can send to kgpu's gRPC server (src/rpc), which every socket kgpu serves
// (device plugin, DRA, registration) reads. Two shapes per input:
//  - raw: the HTTP/2 client preface followed by the input's bytes, as they come off the socket;
//  - built: a real request built with nghttp2's client (a fuzzed path, content-type and headers,
//    and a fuzzed body that may or may not follow gRPC's framing), split at fuzzed points, so the
//    run gets past HPACK into the gRPC layer.
// The connection must end or keep going; never crash, hang or grow without bound.
#include <fuzzer/FuzzedDataProvider.h>
#include <nghttp2/nghttp2.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "rpc/mailbox.h"
#include "rpc/server_connection.h"

namespace {

using namespace kgpu;

std::shared_ptr<const rpc::Service> service() {
  static auto s = [] {
    auto svc = std::make_shared<rpc::Service>();
    svc->unary("/x.Y/Unary", [](std::string_view req, rpc::Responder r) { r.reply(std::string(req)); });
    svc->unary("/x.Y/Fail", [](std::string_view, rpc::Responder r) { r.fail({rpc::Code::Internal, "no\n%"}); });
    svc->server_streaming("/x.Y/Stream", [](std::string_view req, std::shared_ptr<rpc::ServerStream> s) {
      s->send_latest(std::make_shared<std::string>(req));
    });
    return std::shared_ptr<const rpc::Service>(svc);
  }();
  return s;
}

// Wire bytes of one request made by nghttp2's client session.
std::string built_request(FuzzedDataProvider& in) {
  static const char* kPaths[] = {"/x.Y/Unary", "/x.Y/Fail", "/x.Y/Stream", "/x.Y/Missing", ""};
  static const char* kTypes[] = {"application/grpc", "application/grpc+proto", "text/plain", ""};
  std::string out;
  nghttp2_session_callbacks* cb = nullptr;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session* client = nullptr;
  nghttp2_session_client_new(&client, cb, nullptr);
  nghttp2_session_callbacks_del(cb);
  nghttp2_submit_settings(client, NGHTTP2_FLAG_NONE, nullptr, 0);
  std::string path = kPaths[in.ConsumeIntegralInRange<size_t>(0, 4)];
  std::string type = kTypes[in.ConsumeIntegralInRange<size_t>(0, 3)];
  std::string extra_name = in.ConsumeRandomLengthString(16), extra_value = in.ConsumeRandomLengthString(64);
  // Every :authority a kubelet or tool sends: localhost (kubelets >= 1.26), the socket path (older
  // kubelets), encoded, empty, absent (nullptr), or fuzzed.
  static const char* kAuthorities[] = {"localhost", "/var/lib/kubelet/device-plugins/kgpu.sock",
                                       "%2Fvar%2Flib%2Fkubelet%2Fkubelet.sock", "", nullptr};
  const char* chosen = kAuthorities[in.ConsumeIntegralInRange<size_t>(0, 4)];
  std::string method = "POST", scheme = "http",
              authority = in.ConsumeBool() ? in.ConsumeRandomLengthString(64) : std::string(chosen ? chosen : "");
  auto nv = [](const std::string& n, const std::string& v) {
    return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(n.data())),
                      reinterpret_cast<uint8_t*>(const_cast<char*>(v.data())), n.size(), v.size(),
                      NGHTTP2_NV_FLAG_NONE};
  };
  std::string k1 = ":method", k2 = ":scheme", k3 = ":authority", k4 = ":path", k5 = "content-type";
  std::vector<nghttp2_nv> headers = {nv(k1, method), nv(k2, scheme), nv(k4, path), nv(k5, type)};
  if (chosen || !authority.empty()) headers.insert(headers.begin() + 2, nv(k3, authority));
  if (!extra_name.empty()) headers.push_back(nv(extra_name, extra_value));
  static std::string body;
  body = in.ConsumeBool() ? in.ConsumeRandomLengthString(4096) : [&] {
    std::string m = in.ConsumeRandomLengthString(2048);
    std::string framed(5, '\0');
    framed[4] = static_cast<char>(m.size() & 0xff);
    framed[3] = static_cast<char>((m.size() >> 8) & 0xff);
    return framed + m;
  }();
  static size_t off;
  off = 0;
  nghttp2_data_provider provider{};
  provider.read_callback = [](nghttp2_session*, int32_t, uint8_t* buf, size_t len, uint32_t* flags,
                              nghttp2_data_source*, void*) -> ssize_t {
    size_t n = std::min(len, body.size() - off);
    std::memcpy(buf, body.data() + off, n);
    off += n;
    if (off == body.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
    return static_cast<ssize_t>(n);
  };
  nghttp2_submit_request(client, nullptr, headers.data(), headers.size(), &provider, nullptr);
  for (;;) {
    const uint8_t* data = nullptr;
    ssize_t n = nghttp2_session_mem_send(client, &data);
    if (n <= 0) break;
    out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  }
  nghttp2_session_del(client);
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider in(data, size);
  std::string wire;
  if (in.ConsumeBool()) {
    wire = built_request(in);
    // A few fuzzed bytes flipped inside a well-formed request.
    for (int i = in.ConsumeIntegralInRange(0, 3); i > 0 && !wire.empty(); --i)
      wire[in.ConsumeIntegralInRange<size_t>(0, wire.size() - 1)] ^= static_cast<char>(in.ConsumeIntegral<uint8_t>());
  } else {
    wire = std::string(NGHTTP2_CLIENT_MAGIC, NGHTTP2_CLIENT_MAGIC_LEN) + in.ConsumeRemainingBytesAsString();
  }
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, fds) != 0) return 0;
  int efd = ::eventfd(0, EFD_NONBLOCK);
  auto mailbox = std::make_shared<rpc::Mailbox>(efd);
  rpc::InputBudget budget;  // per input: a fresh process-wide account, which must end at zero
  rpc::PeerLedger ledger;   // likewise its calls per peer
  {
    static rpc::TransportLog log;
    rpc::ServerConnection conn(1, UniqueFd(fds[0]), service(), mailbox, log, budget, ledger);
    size_t off = 0;
    bool alive = conn.valid();
    while (alive && off < wire.size()) {
      ssize_t n = ::write(fds[1], wire.data() + off, std::min<size_t>(wire.size() - off, 1024));
      if (n <= 0) break;
      off += static_cast<size_t>(n);
      alive = conn.on_readable() && conn.flush();
      mailbox->take();  // replies are not delivered: the fuzzer looks at the parsing side
      char sink[65536];
      while (::read(fds[1], sink, sizeof(sink)) > 0) {
      }
    }
    // Deadlines and timers are the server's: run them as if they had all passed.
    conn.expire(std::chrono::steady_clock::now() + std::chrono::hours(1));
    mailbox->take();
  }
  if (budget.used != 0 || budget.pinned != 0 || !ledger.empty()) std::abort();  // what a connection held is given back
  mailbox->close();
  ::close(fds[1]);
  ::close(efd);
  return 0;
}
