#include "http/url.h"

#include <gtest/gtest.h>

namespace kgpu::http {
namespace {

TEST(HttpUrl, HttpsWithIpAndPort) {
  auto url = parse_url("https://10.96.0.1:443");
  ASSERT_TRUE(url) << url.error().message;
  EXPECT_TRUE(url->tls);
  EXPECT_EQ(url->host, "10.96.0.1");
  EXPECT_EQ(url->port, 443);
  EXPECT_EQ(url->base_path, "");
  EXPECT_EQ(url->authority(), "10.96.0.1:443");
}

TEST(HttpUrl, HttpDefaultsAndPath) {
  auto url = parse_url("http://127.0.0.1:8001");
  ASSERT_TRUE(url);
  EXPECT_FALSE(url->tls);
  EXPECT_EQ(url->port, 8001);
  auto named = parse_url("https://kubernetes.default.svc/prefix/");
  ASSERT_TRUE(named);
  EXPECT_EQ(named->port, 443);
  EXPECT_EQ(named->host, "kubernetes.default.svc");
  EXPECT_EQ(named->base_path, "/prefix");
  EXPECT_EQ(parse_url("http://example")->port, 80);
}

TEST(HttpUrl, Ipv6InBrackets) {
  auto url = parse_url("https://[fd00::1]:6443");
  ASSERT_TRUE(url) << url.error().message;
  EXPECT_EQ(url->host, "fd00::1");
  EXPECT_EQ(url->port, 6443);
  EXPECT_EQ(url->authority(), "[fd00::1]:6443");
  EXPECT_TRUE(is_ip_literal(url->host));
  auto no_port = parse_url("http://[::1]");
  ASSERT_TRUE(no_port);
  EXPECT_EQ(no_port->port, 80);
}

TEST(HttpUrl, RejectsWhatItCannotUse) {
  for (const char* bad : {"", "ftp://x", "10.96.0.1:443", "https://", "https://:443", "https://h:0", "https://h:65536",
                          "https://h:", "https://h:12a", "https://[fd00::1", "https://[nothex]:1", "https://[::1]x",
                          "https://u@h", "https://h/p?q=1", "https://h/p#f", "https://h o", "https://h/a b"}) {
    auto url = parse_url(bad);
    EXPECT_FALSE(url) << bad;
    if (!url) {
      EXPECT_EQ(url.error().code, Error::Code::InvalidArgument);
      EXPECT_NE(url.error().message.find(bad), std::string::npos) << url.error().message;
    }
  }
}

}  // namespace
}  // namespace kgpu::http
