#pragma once
// Strict HTTP/1.1 response parsing, pure (no I/O): the status line, the header block, the chunked
// framing, and an incremental parser that takes bytes as they arrive (in any split) and hands out
// the body. Sizes are capped (header block, chunk-size line) so a hostile or broken peer costs
// bounded memory; anything malformed is an Error naming what was wrong.
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include "core/result.h"
#include "http/message.h"

namespace kgpu::http {

// "HTTP/1.1 200 OK" (HTTP/1.0 or 1.1, a 3-digit status 100..599, any reason phrase).
Result<ResponseHead> parse_status_line(std::string_view line);

// A whole head: the status line and the header lines, CRLF-separated, without the empty line that
// ends it. No obsolete line folding, header names are tokens, values have no control characters.
Result<ResponseHead> parse_response_head(std::string_view block);

// One chunk-size line without its CRLF: hex digits (at most 15), optional ";extension"s.
Result<uint64_t> parse_chunk_size_line(std::string_view line);

// How the body is delimited, from the head of a response to a request with `method`.
struct BodyFraming {
  enum class Kind { None, Length, Chunked, UntilClose };
  Kind kind = Kind::None;
  uint64_t length = 0;  // Kind::Length
};
Result<BodyFraming> body_framing(const ResponseHead& head, std::string_view method);

class ResponseParser {
 public:
  // Gets body bytes as they are decoded; returning false stops the parse (feed() returns Stopped).
  using BodySink = std::function<bool(std::string_view)>;
  enum class State { Head, Body, Complete, Stopped };

  explicit ResponseParser(std::string method) : method_(std::move(method)) {}

  // Consumes `data` (a 1xx interim response is skipped); body bytes go to `sink`. Returns the state
  // reached: Complete once the whole response has arrived (bytes after it are ignored: the
  // connection is closed after each request), Stopped when the sink said so.
  Result<State> feed(std::string_view data, const BodySink& sink);
  // The peer closed the connection: completes a body delimited by the close; anything else
  // unfinished is an Error (a truncated response).
  Result<State> finish();

  State state() const { return state_; }
  // Valid from State::Body on.
  const ResponseHead& head() const { return head_; }

 private:
  enum class Chunk { SizeLine, Data, DataCrlf, Trailers };
  Result<size_t> feed_head(std::string_view data);
  Result<size_t> feed_chunked(std::string_view data, const BodySink& sink);
  Result<State> deliver(std::string_view bytes, const BodySink& sink);

  std::string method_;
  State state_ = State::Head;
  std::string pending_;  // an unfinished head, chunk-size line or trailer block
  ResponseHead head_;
  BodyFraming framing_;
  uint64_t remaining_ = 0;  // of the Content-Length body or of the current chunk
  Chunk chunk_ = Chunk::SizeLine;
  size_t trailer_bytes_ = 0;
};

}  // namespace kgpu::http
