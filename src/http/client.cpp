#include "http/client.h"

#include <array>
#include <optional>

#include "http/response_parser.h"
#include "http/socket.h"
#include "http/tls.h"

namespace kgpu::http {

namespace {

// The connection of one request: TCP, with TLS over it for https.
class Connection {
 public:
  Connection(UniqueFd fd, std::optional<TlsStream> tls) : fd_(std::move(fd)), tls_(std::move(tls)) {}

  Result<size_t> read_some(char* buf, size_t size, const Waiter& waiter, std::string_view phase) {
    return tls_ ? tls_->read_some(buf, size, waiter, phase) : recv_some(fd_.get(), buf, size, waiter, phase);
  }
  Status write_all(std::string_view data, const Waiter& waiter, std::string_view phase) {
    return tls_ ? tls_->write_all(data, waiter, phase) : send_all(fd_.get(), data, waiter, phase);
  }

 private:
  UniqueFd fd_;  // declared first: destroyed after the TLS session that writes through it
  std::optional<TlsStream> tls_;
};

Result<Connection> open_connection(const Request& r, const Waiter& waiter) {
  auto fd = connect_tcp(r.url, waiter);
  if (!fd) return fd.error();
  if (!r.url.tls) return Connection(std::move(*fd), std::nullopt);
  auto tls = TlsStream::handshake(fd->get(), r.url, r.ca_file, waiter);
  if (!tls) return tls.error();
  return Connection(std::move(*fd), std::move(*tls));
}

// Where the body of the answer goes: Response::body (capped), or the caller's streaming callback
// for a 2xx answer, split into lines for on_line (each capped).
class BodySink {
 public:
  BodySink(const Request& r, Response& response) : r_(r), response_(response) {}

  bool take(int status, std::string_view bytes) {
    const bool streaming = status >= 200 && status < 300 && (r_.on_chunk || r_.on_line);
    if (!streaming) {
      if (response_.body.size() + bytes.size() > r_.max_body)
        return fail("the answer's body is larger than " + std::to_string(r_.max_body) + " bytes");
      response_.body.append(bytes);
      return true;
    }
    if (r_.on_chunk) return r_.on_chunk(bytes) || stop();
    while (!bytes.empty()) {
      const size_t lf = bytes.find('\n');
      const std::string_view part = bytes.substr(0, lf);
      if (line_.size() + part.size() > r_.max_body)
        return fail("a line of the answer is longer than " + std::to_string(r_.max_body) + " bytes");
      if (lf == std::string_view::npos) {
        line_.append(part);
        return true;
      }
      bytes.remove_prefix(lf + 1);
      bool more = true;
      if (line_.empty()) {
        if (!part.empty()) more = r_.on_line(part);  // the whole line in this chunk: no copy
      } else {
        line_.append(part);
        more = r_.on_line(line_);
        line_.clear();
      }
      if (!more) return stop();
    }
    return true;
  }

  // The answer ended: a last line without its '\n' is still a line (the caller's parser judges it).
  void end() {
    if (!line_.empty() && r_.on_line && !response_.stopped) r_.on_line(line_);
    line_.clear();
  }

  const std::optional<Error>& error() const { return error_; }

 private:
  bool fail(std::string message) {
    error_ = Error::unavailable(std::move(message));
    return false;
  }
  bool stop() {
    response_.stopped = true;
    return false;
  }

  const Request& r_;
  Response& response_;
  std::string line_;  // the start of a line whose '\n' has not arrived yet
  std::optional<Error> error_;
};

Result<Response> exchange(const Request& r, const Waiter& waiter) {
  if (r.on_chunk && r.on_line) return Error::invalid("give on_chunk or on_line, not both");
  if (r.deadline == Clock::time_point{}) return Error::invalid("no deadline set: every request needs one");
  auto wire = serialize_request(r);
  if (!wire) return wire.error();
  auto connection = open_connection(r, waiter);
  if (!connection) return connection.error();
  if (auto sent = connection->write_all(*wire, waiter, "sending the request"); !sent) return sent.error();

  Response response;
  ResponseParser parser(r.method);
  BodySink body(r, response);
  const auto sink = [&](std::string_view bytes) { return body.take(parser.head().status, bytes); };
  std::array<char, 16384> buf;
  while (true) {
    const char* phase =
        parser.state() == ResponseParser::State::Head ? "waiting for the answer's headers"
                                                      : "reading the answer's body";
    auto n = connection->read_some(buf.data(), buf.size(), waiter, phase);
    if (!n) return n.error();
    auto state = *n == 0 ? parser.finish() : parser.feed(std::string_view(buf.data(), *n), sink);
    if (body.error()) return *body.error();
    if (!state) return state.error();
    if (*state == ResponseParser::State::Complete || *state == ResponseParser::State::Stopped) break;
  }
  body.end();
  response.status = parser.head().status;
  response.headers = parser.head().headers;
  return response;
}

}  // namespace

Result<Response> request(const Request& r) {
  const Waiter waiter(r.deadline, r.canceller != nullptr ? r.canceller->fd() : -1);
  auto response = exchange(r, waiter);
  if (!response)
    return Error{response.error().code,
                 r.method + " " + r.url.to_string() + r.target + ": " + response.error().message};
  return response;
}

}  // namespace kgpu::http
