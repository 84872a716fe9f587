#include "http/tls.h"

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include <array>

namespace kgpu::http {

namespace {

struct CtxFree {
  void operator()(SSL_CTX* c) const { SSL_CTX_free(c); }
};
struct SslFree {
  void operator()(SSL* s) const { SSL_free(s); }
};

// Every error OpenSSL queued on this thread, oldest first, then the queue is empty.
std::string openssl_errors() {
  std::string out;
  while (unsigned long e = ERR_get_error()) {
    std::array<char, 256> buf{};
    ERR_error_string_n(e, buf.data(), buf.size());
    if (!out.empty()) out += "; ";
    out += buf.data();
  }
  return out.empty() ? "no detail from OpenSSL" : out;
}

}  // namespace

struct TlsStream::Engine {
  std::unique_ptr<SSL_CTX, CtxFree> ctx;
  std::unique_ptr<SSL, SslFree> ssl;
  BIO* from_net = nullptr;  // owned by ssl: ciphertext received, for OpenSSL to read
  BIO* to_net = nullptr;    // owned by ssl: ciphertext OpenSSL wrote, for us to send
  int fd = -1;
  bool peer_closed = false;
  std::string authority;

  // Sends what OpenSSL produced (handshake messages, records, alerts).
  Status flush(const Waiter& waiter, std::string_view phase) {
    std::array<char, 16384> buf;
    while (BIO_ctrl_pending(to_net) > 0) {
      const int n = BIO_read(to_net, buf.data(), static_cast<int>(buf.size()));
      if (n <= 0) break;
      if (auto sent = send_all(fd, std::string_view(buf.data(), static_cast<size_t>(n)), waiter, phase); !sent)
        return sent;
    }
    return ok_status();
  }

  // Runs `op` (SSL_connect, SSL_read_ex, SSL_write_ex) until it completes, feeding it bytes from
  // the socket as it asks. Returns false when the peer closed the connection cleanly.
  template <typename Op>
  Result<bool> drive(Op op, const Waiter& waiter, std::string_view phase) {
    while (true) {
      ERR_clear_error();
      const int rc = op();
      const int err = rc > 0 ? SSL_ERROR_NONE : SSL_get_error(ssl.get(), rc);
      const bool fatal = err != SSL_ERROR_NONE && err != SSL_ERROR_WANT_READ && err != SSL_ERROR_WANT_WRITE &&
                         err != SSL_ERROR_ZERO_RETURN;
      if (fatal) {
        const std::string detail = describe(err, phase);
        (void)flush(waiter, phase);  // the alert, best effort: the error above is what matters
        return Error::unavailable(detail);
      }
      if (auto sent = flush(waiter, phase); !sent) return sent.error();
      if (err == SSL_ERROR_NONE) return true;
      if (err == SSL_ERROR_ZERO_RETURN) return false;
      if (err == SSL_ERROR_WANT_READ) {
        if (peer_closed)
          return Error::unavailable("connection closed by " + authority + " while " + std::string(phase));
        std::array<char, 16384> buf;
        auto n = recv_some(fd, buf.data(), buf.size(), waiter, phase);
        if (!n) return n.error();
        if (*n == 0) {
          peer_closed = true;
          BIO_set_mem_eof_return(from_net, 0);  // OpenSSL now sees the end of the stream
        } else if (BIO_write(from_net, buf.data(), static_cast<int>(*n)) != static_cast<int>(*n)) {
          return Error::internal("TLS: cannot buffer received bytes: " + openssl_errors());
        }
      }
      // SSL_ERROR_WANT_WRITE: memory BIOs never refuse a write; flushed above, try again.
    }
  }

  std::string describe(int err, std::string_view phase) {
    const long verify = SSL_get_verify_result(ssl.get());
    if (verify != X509_V_OK) {
      ERR_clear_error();
      return "TLS certificate verification of " + authority + " failed: " + X509_verify_cert_error_string(verify);
    }
    if (err == SSL_ERROR_SYSCALL && peer_closed)
      return "connection closed by " + authority + " while " + std::string(phase);
    return "TLS error while " + std::string(phase) + ": " + openssl_errors();
  }
};

TlsStream::TlsStream(std::unique_ptr<Engine> engine) : engine_(std::move(engine)) {}
TlsStream::TlsStream(TlsStream&&) noexcept = default;
TlsStream& TlsStream::operator=(TlsStream&&) noexcept = default;
TlsStream::~TlsStream() = default;

Result<TlsStream> TlsStream::handshake(int fd, const Url& url, const std::string& ca_file, const Waiter& waiter) {
  auto e = std::make_unique<Engine>();
  e->fd = fd;
  e->authority = url.authority();
  ERR_clear_error();
  e->ctx.reset(SSL_CTX_new(TLS_client_method()));
  if (!e->ctx) return Error::internal("TLS context: " + openssl_errors());
  SSL_CTX* ctx = e->ctx.get();
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  // A TCP close without close_notify ends the stream like one with it; Content-Length and the
  // chunked framing still catch a truncated answer.
  SSL_CTX_set_options(ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, nullptr);
  if (ca_file.empty()) {
    if (SSL_CTX_set_default_verify_paths(ctx) != 1)
      return Error::unavailable("TLS: cannot load the system's CA certificates: " + openssl_errors());
  } else if (SSL_CTX_load_verify_locations(ctx, ca_file.c_str(), nullptr) != 1) {
    return Error::invalid("TLS: cannot load CA file '" + ca_file + "': " + openssl_errors());
  }

  e->ssl.reset(SSL_new(ctx));
  if (!e->ssl) return Error::internal("TLS session: " + openssl_errors());
  SSL* ssl = e->ssl.get();
  X509_VERIFY_PARAM* param = SSL_get0_param(ssl);
  if (is_ip_literal(url.host)) {
    if (X509_VERIFY_PARAM_set1_ip_asc(param, url.host.c_str()) != 1)
      return Error::invalid("TLS: cannot check for IP address '" + url.host + "': " + openssl_errors());
  } else {
    X509_VERIFY_PARAM_set_hostflags(param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    if (X509_VERIFY_PARAM_set1_host(param, url.host.c_str(), url.host.size()) != 1 ||
        SSL_ctrl(ssl, SSL_CTRL_SET_TLSEXT_HOSTNAME, TLSEXT_NAMETYPE_host_name,  // SNI; the macro casts
                 const_cast<char*>(url.host.c_str())) != 1)
      return Error::invalid("TLS: cannot check for host name '" + url.host + "': " + openssl_errors());
  }
  e->from_net = BIO_new(BIO_s_mem());
  e->to_net = BIO_new(BIO_s_mem());
  if (e->from_net == nullptr || e->to_net == nullptr) {
    BIO_free(e->from_net);
    BIO_free(e->to_net);
    return Error::internal("TLS buffers: " + openssl_errors());
  }
  SSL_set_bio(ssl, e->from_net, e->to_net);
  SSL_set_connect_state(ssl);

  const std::string phase = "doing the TLS handshake with " + e->authority;
  auto done = e->drive([ssl] { return SSL_do_handshake(ssl); }, waiter, phase);
  if (!done) return done.error();
  if (!*done) return Error::unavailable("connection closed by " + e->authority + " while " + phase);
  return TlsStream(std::move(e));
}

Result<size_t> TlsStream::read_some(char* buf, size_t size, const Waiter& waiter, std::string_view phase) {
  size_t got = 0;
  SSL* ssl = engine_->ssl.get();
  auto more = engine_->drive([&] { return SSL_read_ex(ssl, buf, size, &got); }, waiter, phase);
  if (!more) return more.error();
  return *more ? got : 0;
}

Status TlsStream::write_all(std::string_view data, const Waiter& waiter, std::string_view phase) {
  SSL* ssl = engine_->ssl.get();
  while (!data.empty()) {
    size_t written = 0;
    auto open = engine_->drive([&] { return SSL_write_ex(ssl, data.data(), data.size(), &written); }, waiter, phase);
    if (!open) return open.error();
    if (!*open)
      return Error::unavailable("connection closed by " + engine_->authority + " while " + std::string(phase));
    data.remove_prefix(written);
  }
  return ok_status();
}

}  // namespace kgpu::http
