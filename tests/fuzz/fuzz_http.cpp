// Fuzz target: what kgpu reads from an HTTP server, and the URL it is configured with.
// The input: a byte choosing the piece sizes, a byte choosing GET or HEAD (bit 0), then an HTTP
// response, fed to ResponseParser twice: whole, and in pieces of those sizes. Both runs must agree
// (the same outcome, head and body: the framing may not depend on how the network splits the
// bytes), a completed Content-Length body has exactly the announced length, and nothing crashes or
// grows past the caps. The rest of the input also goes through the chunk-size line, header block
// and URL parsers.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "http/response_parser.h"
#include "http/url.h"

namespace {

using kgpu::http::ResponseParser;

struct Outcome {
  bool ok = false;
  ResponseParser::State state = ResponseParser::State::Head;
  int status = 0;
  kgpu::http::Headers headers;
  std::string body;
};

Outcome run(std::string_view wire, const std::string& method, uint8_t step_seed) {
  Outcome out;
  ResponseParser parser(method);
  auto sink = [&](std::string_view bytes) {
    out.body.append(bytes);
    return true;
  };
  kgpu::Result<ResponseParser::State> state = ResponseParser::State::Head;
  size_t step = step_seed == 0 ? wire.size() + 1 : step_seed;
  while (!wire.empty()) {
    const size_t take = std::min(step, wire.size());
    state = parser.feed(wire.substr(0, take), sink);
    wire.remove_prefix(take);
    if (!state || *state == ResponseParser::State::Complete) break;
    step = step % 7 + 1 + step_seed % 5;  // varying piece sizes
  }
  if (state && *state != ResponseParser::State::Complete) state = parser.finish();
  out.ok = static_cast<bool>(state);
  if (out.ok) out.state = *state;
  if (parser.state() != ResponseParser::State::Head) {
    out.status = parser.head().status;
    out.headers = parser.head().headers;
    const auto cl = out.headers.find("content-length");
    if (out.ok && cl != out.headers.end() && out.headers.count("transfer-encoding") == 0 && method != "HEAD" &&
        out.status >= 200 && out.status != 204 && out.status != 304 && out.body.size() != std::stoull(cl->second))
      __builtin_trap();  // a completed Content-Length body has exactly the announced length
  }
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t step_seed = data[0];
  const std::string method = (data[1] & 1) != 0 ? "HEAD" : "GET";
  const std::string_view wire(reinterpret_cast<const char*>(data) + 2, size - 2);

  const Outcome whole = run(wire, method, 0);
  const Outcome pieces = run(wire, method, step_seed);
  if (whole.ok != pieces.ok || whole.status != pieces.status || whole.headers != pieces.headers ||
      whole.body != pieces.body || whole.state != pieces.state)
    __builtin_trap();  // the outcome depended on how the bytes were split

  (void)kgpu::http::parse_chunk_size_line(wire.substr(0, wire.find("\r\n")));
  (void)kgpu::http::parse_response_head(wire.substr(0, wire.find("\r\n\r\n")));
  if (auto url = kgpu::http::parse_url(wire)) {
    if (url->host.empty() || url->port == 0) __builtin_trap();
    if (auto again = kgpu::http::parse_url(url->to_string()); !again || again->authority() != url->authority())
      __builtin_trap();  // what to_string() writes parses back to the same server
  }
  return 0;
}
