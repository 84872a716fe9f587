#include "kube/line_splitter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace kgpu::kube {
namespace {

std::vector<std::string> split(LineSplitter& s, const std::vector<std::string>& chunks) {
  std::vector<std::string> lines;
  for (const auto& c : chunks) {
    auto r = s.feed(c, [&](std::string_view line) {
      lines.emplace_back(line);
      return true;
    });
    EXPECT_TRUE(r.ok()) << r.error().message;
  }
  return lines;
}

TEST(LineSplitter, JoinsLinesAcrossChunks) {
  LineSplitter s(100);
  EXPECT_EQ(split(s, {"ab", "c\nde", "f\r\n\n", "g"}), (std::vector<std::string>{"abc", "def"}));
  EXPECT_EQ(s.pending_bytes(), 1u);
  EXPECT_EQ(split(s, {"\n"}), (std::vector<std::string>{"g"}));
}

TEST(LineSplitter, StopsWhenTheCallerSaysSo) {
  LineSplitter s(100);
  int seen = 0;
  auto r = s.feed("a\nb\nc\n", [&](std::string_view) { return ++seen < 2; });
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(*r);
  EXPECT_EQ(seen, 2);
}

// Regression (issue 13): a watch line that never ended grew without bound (and was rescanned
// from its start for every chunk). The splitter refuses a line past its limit, however it arrives.
TEST(LineSplitter, RefusesALineLongerThanTheLimit) {
  LineSplitter s(1000);
  std::string chunk(100, 'x');
  Result<bool> r = true;
  int fed = 0;
  while (r.ok() && fed < 100) {
    r = s.feed(chunk, [](std::string_view) { return true; });
    ++fed;
  }
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(fed, 11);  // 1000 bytes were fine, the 1001st was not
  EXPECT_NE(r.error().message.find("1000"), std::string::npos) << r.error().message;

  LineSplitter one_chunk(10);
  EXPECT_FALSE(one_chunk.feed(std::string(11, 'y') + "\n", [](std::string_view) { return true; }).ok());
  LineSplitter exact(10);
  EXPECT_TRUE(exact.feed(std::string(10, 'y') + "\n", [](std::string_view) { return true; }).ok());
}

TEST(LineSplitter, ByteByByteIsLinear) {
  // A 1 MiB line fed one byte at a time: with a rescan per chunk this would be ~5e11 steps.
  LineSplitter s(2 * 1024 * 1024);
  size_t total = 0;
  for (int i = 0; i < 1024 * 1024; ++i)
    ASSERT_TRUE(s.feed("z", [&](std::string_view l) { total += l.size(); return true; }).ok());
  ASSERT_TRUE(s.feed("\n", [&](std::string_view l) { total += l.size(); return true; }).ok());
  EXPECT_EQ(total, 1024u * 1024u);
}

}  // namespace
}  // namespace kgpu::kube
