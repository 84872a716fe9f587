#pragma once
// TLS (1.2 or later) over a connected non-blocking socket, with OpenSSL as a pure protocol engine:
// it reads and writes memory BIOs and this code moves the bytes with socket.h's waits, so the
// handshake and every read honour the request's deadline and Canceller like plain TCP does (and no
// write can raise SIGPIPE). The server is verified against the CA file (or the system's default
// paths) and must carry the URL's host: a DNS name (also sent as SNI) or an IP address SAN.
#include <memory>
#include <string>
#include <string_view>

#include "core/result.h"
#include "http/socket.h"
#include "http/url.h"

namespace kgpu::http {

class TlsStream {
 public:
  // `ca_file` empty: OpenSSL's default verify paths (the system's trust store).
  static Result<TlsStream> handshake(int fd, const Url& url, const std::string& ca_file, const Waiter& waiter);

  TlsStream(TlsStream&&) noexcept;
  TlsStream& operator=(TlsStream&&) noexcept;
  ~TlsStream();

  // Up to `size` decrypted bytes; 0 when the peer closed (close_notify or a bare TCP close: the
  // HTTP framing tells a truncated answer).
  Result<size_t> read_some(char* buf, size_t size, const Waiter& waiter, std::string_view phase);
  Status write_all(std::string_view data, const Waiter& waiter, std::string_view phase);

 private:
  struct Engine;
  explicit TlsStream(std::unique_ptr<Engine> engine);
  std::unique_ptr<Engine> engine_;
};

}  // namespace kgpu::http
