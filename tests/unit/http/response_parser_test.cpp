#include "http/response_parser.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kgpu::http {
namespace {

using State = ResponseParser::State;

// Feeds `wire` split at every position `step` apart, then the close; returns the body or the error.
struct Parsed {
  Result<State> state = State::Head;
  std::string body;
  ResponseHead head;
};
Parsed parse(const std::string& wire, size_t step, const std::string& method = "GET", bool close = true) {
  Parsed out;
  ResponseParser parser(method);
  auto sink = [&](std::string_view b) {
    out.body.append(b);
    return true;
  };
  for (size_t at = 0; at < wire.size(); at += step) {
    out.state = parser.feed(std::string_view(wire).substr(at, step), sink);
    if (!out.state || *out.state == State::Complete) break;
  }
  if (out.state && *out.state != State::Complete && close) out.state = parser.finish();
  if (parser.state() != State::Head) out.head = parser.head();
  return out;
}

TEST(HttpStatusLine, Parses) {
  auto head = parse_status_line("HTTP/1.1 404 Not Found");
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 404);
  EXPECT_EQ(head->reason, "Not Found");
  auto bare = parse_status_line("HTTP/1.0 200");
  ASSERT_TRUE(bare);
  EXPECT_EQ(bare->version_minor, 0);
  EXPECT_TRUE(parse_status_line("HTTP/1.1 200 "));
}

TEST(HttpStatusLine, RejectsMalformed) {
  for (const char* bad : {"", "HTTP/2 200 OK", "HTTP/1.1 20 OK", "HTTP/1.1 2000 OK", "HTTP/1.1 099 x", "HTTP/1.1 600 x",
                          "HTTP/1.1  200 OK", "HTTP/1.1 200OK", "http/1.1 200 OK", "HTTP/1.2 200 OK", "ICY 200 OK"})
    EXPECT_FALSE(parse_status_line(bad)) << bad;
  EXPECT_FALSE(parse_status_line(std::string("HTTP/1.1 200 O\0K", 16)));
}

TEST(HttpHeaders, LowerCaseNamesTrimmedValuesJoinedRepeats) {
  auto head = parse_response_head("HTTP/1.1 200 OK\r\nContent-Type:  application/json \r\nX-A: 1\r\nx-a: 2\r\nEmpty:");
  ASSERT_TRUE(head) << head.error().message;
  EXPECT_EQ(head->headers.at("content-type"), "application/json");
  EXPECT_EQ(head->headers.at("x-a"), "1, 2");
  EXPECT_EQ(head->headers.at("empty"), "");
}

TEST(HttpHeaders, RejectsMalformed) {
  for (const char* bad : {"HTTP/1.1 200 OK\r\nNoColon", "HTTP/1.1 200 OK\r\n: v", "HTTP/1.1 200 OK\r\nA B: v",
                          "HTTP/1.1 200 OK\r\nA : v", "HTTP/1.1 200 OK\r\nA: v\r\n folded",
                          "HTTP/1.1 200 OK\r\nA: v\r\n\r\nB: w", "HTTP/1.1 200 OK\r\nA: v\rB: w",
                          "HTTP/1.1 200 OK\r\nA: v\nB: w"}) {
    auto head = parse_response_head(bad);
    EXPECT_FALSE(head) << bad;
  }
  EXPECT_FALSE(parse_response_head("HTTP/1.1 200 OK\r\nA: " + std::string(kMaxHeaderBlock, 'x')));
}

TEST(HttpChunkSize, Parses) {
  EXPECT_EQ(*parse_chunk_size_line("0"), 0u);
  EXPECT_EQ(*parse_chunk_size_line("1aF"), 0x1afu);
  EXPECT_EQ(*parse_chunk_size_line("10;name=value"), 16u);
  EXPECT_EQ(*parse_chunk_size_line("10 ; ext"), 16u);
  EXPECT_EQ(*parse_chunk_size_line("fffffffffffffff"), 0xfffffffffffffffu);
  for (const char* bad : {"", ";x", "g", "10 20", "-1", "0x10", "1000000000000000"})
    EXPECT_FALSE(parse_chunk_size_line(bad)) << bad;
  EXPECT_FALSE(parse_chunk_size_line("1;" + std::string(kMaxChunkSizeLine, 'x')));
}

TEST(HttpBodyFraming, FromTheHead) {
  ResponseHead head;
  head.status = 200;
  EXPECT_EQ(body_framing(head, "GET")->kind, BodyFraming::Kind::UntilClose);
  head.headers["content-length"] = "12, 12";
  EXPECT_EQ(body_framing(head, "GET")->length, 12u);
  EXPECT_EQ(body_framing(head, "HEAD")->kind, BodyFraming::Kind::None);
  head.headers["content-length"] = "12, 13";
  EXPECT_FALSE(body_framing(head, "GET"));
  head.headers["content-length"] = "+12";
  EXPECT_FALSE(body_framing(head, "GET"));
  head.headers["content-length"] = "99999999999999999999";
  EXPECT_FALSE(body_framing(head, "GET"));
  head.headers["transfer-encoding"] = "chunked";
  EXPECT_FALSE(body_framing(head, "GET")) << "Transfer-Encoding and Content-Length together";
  head.headers.erase("content-length");
  EXPECT_EQ(body_framing(head, "GET")->kind, BodyFraming::Kind::Chunked);
  head.headers["transfer-encoding"] = "gzip, chunked";
  EXPECT_FALSE(body_framing(head, "GET"));
  head.status = 204;
  EXPECT_EQ(body_framing(head, "GET")->kind, BodyFraming::Kind::None);
}

TEST(HttpResponseParser, ContentLengthInAnySplit) {
  const std::string wire = "HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\nhello worldIGNORED";
  for (size_t step = 1; step <= wire.size(); ++step) {
    auto p = parse(wire, step);
    ASSERT_TRUE(p.state) << step << ": " << p.state.error().message;
    EXPECT_EQ(*p.state, State::Complete);
    EXPECT_EQ(p.body, "hello world") << step;
    EXPECT_EQ(p.head.status, 200);
  }
}

TEST(HttpResponseParser, ChunkedWithExtensionsAndTrailersInAnySplit) {
  const std::string wire =
      "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
      "5\r\nhello\r\n1;ext=1\r\n \r\nA\r\n0123456789\r\n0\r\nX-Trailer: t\r\n\r\n";
  for (size_t step = 1; step <= wire.size(); ++step) {
    auto p = parse(wire, step, "GET", false);
    ASSERT_TRUE(p.state) << step << ": " << p.state.error().message;
    EXPECT_EQ(*p.state, State::Complete) << step;
    EXPECT_EQ(p.body, "hello 0123456789") << step;
  }
}

TEST(HttpResponseParser, InterimAnswersAreSkipped) {
  auto p = parse("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\nok", 3);
  ASSERT_TRUE(p.state) << p.state.error().message;
  EXPECT_EQ(p.head.status, 201);
  EXPECT_EQ(p.body, "ok");
}

TEST(HttpResponseParser, BodyUntilCloseAndNoBody) {
  auto p = parse("HTTP/1.0 200 OK\r\n\r\nall of it", 4);
  ASSERT_TRUE(p.state);
  EXPECT_EQ(p.body, "all of it");
  auto none = parse("HTTP/1.1 204 No Content\r\n\r\n", 100, "GET", false);
  ASSERT_TRUE(none.state);
  EXPECT_EQ(*none.state, State::Complete);
  auto head = parse("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\n", 100, "HEAD", false);
  ASSERT_TRUE(head.state);
  EXPECT_EQ(*head.state, State::Complete);
}

TEST(HttpResponseParser, TruncatedAnswersAreErrors) {
  for (const char* wire : {"", "HTTP/1.1 200 OK\r\nContent-", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nabc",
                           "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nab",
                           "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n"}) {
    auto p = parse(wire, 7);
    EXPECT_FALSE(p.state) << wire;
  }
}

TEST(HttpResponseParser, MalformedChunkedFramingIsAnError) {
  for (const char* chunks : {"5\r\nhelloX\r\n0\r\n\r\n", "5\nhello\r\n0\r\n\r\n", "z\r\n", "5\r\nhello\r\r0\r\n\r\n",
                             "0\r\nbad trailer\r\n\r\n"}) {
    auto p = parse(std::string("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n") + chunks, 2);
    EXPECT_FALSE(p.state) << chunks;
  }
}

TEST(HttpResponseParser, SizesAreCapped) {
  auto long_head = parse("HTTP/1.1 200 OK\r\nA: " + std::string(kMaxHeaderBlock + 10, 'x'), 4096, "GET", false);
  ASSERT_FALSE(long_head.state);
  EXPECT_NE(long_head.state.error().message.find("65536"), std::string::npos) << long_head.state.error().message;
  auto long_size = parse("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1;" + std::string(4096, 'x'), 100,
                         "GET", false);
  EXPECT_FALSE(long_size.state);
}

TEST(HttpResponseParser, SinkCanStop) {
  ResponseParser parser("GET");
  int calls = 0;
  auto state = parser.feed("HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n12345", [&](std::string_view) {
    ++calls;
    return false;
  });
  ASSERT_TRUE(state);
  EXPECT_EQ(*state, State::Stopped);
  EXPECT_EQ(calls, 1);
}

}  // namespace
}  // namespace kgpu::http
