#include "rpc/framing.h"

#include <gtest/gtest.h>

namespace kgpu::rpc {
namespace {

TEST(Framing, MessagesSurviveAnyChunking) {
  std::string a(300, 'a'), b = "", c(70000, 'c');
  std::string wire = frame(a) + frame(b) + frame(c);
  for (size_t chunk : {size_t{1}, size_t{3}, size_t{5}, size_t{4096}, wire.size()}) {
    MessageReader reader;
    for (size_t off = 0; off < wire.size(); off += chunk)
      ASSERT_TRUE(reader.feed(std::string_view(wire).substr(off, chunk)).ok());
    EXPECT_EQ(reader.complete(), 3u) << chunk;
    EXPECT_EQ(reader.next(), a);
    EXPECT_EQ(reader.next(), b);
    EXPECT_EQ(reader.next(), c);
    EXPECT_FALSE(reader.next());
    EXPECT_FALSE(reader.in_message());
  }
}

TEST(Framing, AMessageOverTheLimitIsRefusedBeforeItIsBuffered) {
  MessageReader reader(1000);
  auto st = reader.feed(frame(std::string(1001, 'x')).substr(0, 5));
  EXPECT_EQ(st.code, Code::ResourceExhausted);
  EXPECT_NE(st.message.find("1001"), std::string::npos);
  EXPECT_EQ(reader.feed("more").code, Code::ResourceExhausted);
  EXPECT_FALSE(reader.in_message());
}

TEST(Framing, BuffersGrowWithTheBytesThatArriveNotWithTheAnnouncedLength) {
  MessageReader reader;
  auto prefix = message_prefix(4 * 1024 * 1024);
  ASSERT_TRUE(reader.feed(std::string_view(prefix.data(), prefix.size())).ok());
  EXPECT_LT(reader.buffered(), 64u);
  ASSERT_TRUE(reader.feed(std::string(1000, 'x')).ok());
  EXPECT_GE(reader.buffered(), kPrefixBytes + 1000);
  EXPECT_LT(reader.buffered(), 4 * (kPrefixBytes + 1000));
}

TEST(Framing, ACompressedMessageIsUnimplemented) {
  MessageReader reader;
  std::string wire = frame("x");
  wire[0] = 1;
  EXPECT_EQ(reader.feed(wire).code, Code::Unimplemented);
}

TEST(Framing, AnUnfinishedMessageIsReported) {
  MessageReader reader;
  ASSERT_TRUE(reader.feed(frame("hello").substr(0, 7)).ok());
  EXPECT_TRUE(reader.in_message());
  EXPECT_EQ(reader.complete(), 0u);
}

TEST(Framing, GrpcMessageIsPercentEncodedBothWays) {
  std::string text = "50% of \"GPU-1\" \xc3\xa9\n";
  std::string encoded = percent_encode(text);
  for (char c : encoded) EXPECT_TRUE(c >= 0x20 && c <= 0x7e);
  EXPECT_EQ(encoded.find('\n'), std::string::npos);
  EXPECT_EQ(percent_decode(encoded), text);
  EXPECT_EQ(percent_decode("100%"), "100%");  // a malformed escape is kept
  EXPECT_EQ(percent_decode("%zz"), "%zz");
}

TEST(Framing, TimeoutsParseAndFormat) {
  using namespace std::chrono;
  EXPECT_EQ(parse_timeout("1500m"), nanoseconds(milliseconds(1500)));
  EXPECT_EQ(parse_timeout("2S"), nanoseconds(seconds(2)));
  EXPECT_EQ(parse_timeout("1H"), nanoseconds(hours(1)));
  EXPECT_FALSE(parse_timeout("m"));
  EXPECT_FALSE(parse_timeout("123456789m"));  // more than 8 digits
  EXPECT_FALSE(parse_timeout("12x"));
  EXPECT_EQ(format_timeout(milliseconds(2000)), "2000m");
  EXPECT_EQ(parse_timeout(format_timeout(milliseconds(5))), nanoseconds(milliseconds(5)));
  auto huge = format_timeout(milliseconds(int64_t{1} << 40));
  EXPECT_TRUE(parse_timeout(huge));
}

}  // namespace
}  // namespace kgpu::rpc
