// RequestHeadReader: the header checks kgpu's gRPC server applies in place of nghttp2's HTTP
// messaging validation. Every :authority a kubelet or tool may send is served; the rules of
// RFC 9113 §8 that protect the server still hold.
#include "rpc/request_head.h"

#include <gtest/gtest.h>

#include <utility>
#include <vector>

namespace kgpu::rpc {
namespace {

using Fields = std::vector<std::pair<std::string, std::string>>;

Fields grpc_request(std::optional<std::string> authority) {
  Fields f = {{":method", "POST"}, {":scheme", "http"}, {":path", "/v1beta1.DevicePlugin/ListAndWatch"}};
  if (authority) f.push_back({":authority", *authority});
  f.push_back({"content-type", "application/grpc"});
  f.push_back({"user-agent", "grpc-go/1.27.0"});
  f.push_back({"te", "trailers"});
  return f;
}

// Feeds every field; the reader's verdict at the end.
RequestHeadReader read(const Fields& fields) {
  RequestHeadReader reader;
  for (const auto& [n, v] : fields)
    if (!reader.add(n, v)) return reader;
  reader.finish();
  return reader;
}

class Authority : public ::testing::TestWithParam<std::optional<std::string>> {};

TEST_P(Authority, IsServedWhateverItHolds) {
  auto reader = read(grpc_request(GetParam()));
  ASSERT_FALSE(reader.failed()) << reader.problem()->kind << ": " << reader.problem()->detail;
  EXPECT_EQ(reader.head().path, "/v1beta1.DevicePlugin/ListAndWatch");
  EXPECT_EQ(reader.head().has_authority, GetParam().has_value());
  EXPECT_EQ(reader.head().authority, GetParam().value_or(""));
  EXPECT_FALSE(grpc_refusal(reader.head()).has_value());
}

INSTANTIATE_TEST_SUITE_P(
    KubeletsAndTools, Authority,
    ::testing::Values(std::optional<std::string>("/var/lib/kubelet/device-plugins/kgpu-nvidia.com-gpu.sock"),  // 1.19-1.25
                      std::optional<std::string>("%2Fvar%2Flib%2Fkubelet%2Fdevice-plugins%2Fkgpu.sock"),
                      std::optional<std::string>("localhost"),  // 1.26+
                      std::optional<std::string>(""), std::nullopt,
                      std::optional<std::string>(std::string(4096, 'a'))));

TEST(RequestHead, FourKibAuthorityFitsTheHeaderListBound) {
  auto reader = read(grpc_request("/" + std::string(4095, 'p')));
  EXPECT_FALSE(reader.failed());
  EXPECT_EQ(reader.head().authority.size(), 4096u);
}

struct Malformed {
  const char* name;
  Fields fields;
  const char* kind;
};

class MalformedBlock : public ::testing::TestWithParam<Malformed> {};

TEST_P(MalformedBlock, IsRefusedWithItsReason) {
  auto reader = read(GetParam().fields);
  ASSERT_TRUE(reader.failed());
  EXPECT_EQ(reader.problem()->kind, GetParam().kind) << reader.problem()->detail;
}

const Fields kBase = {{":method", "POST"}, {":scheme", "http"}, {":path", "/a.B/C"}};
Fields with(Fields f, std::pair<std::string, std::string> extra) {
  f.push_back(std::move(extra));
  return f;
}

INSTANTIATE_TEST_SUITE_P(
    Rfc9113, MalformedBlock,
    ::testing::Values(
        Malformed{"DuplicatePath", with(kBase, {":path", "/a.B/D"}), "duplicate pseudo-header"},
        Malformed{"DuplicateAuthority",
                  with(with(kBase, {":authority", "localhost"}), {":authority", "/x.sock"}), "duplicate pseudo-header"},
        Malformed{"PseudoAfterRegular", with(with(kBase, {"te", "trailers"}), {":authority", "x"}),
                  "pseudo-header after a regular header"},
        Malformed{"UnknownPseudo", with(kBase, {":status", "200"}), "unknown pseudo-header"},
        Malformed{"MissingPath", Fields{{":method", "POST"}, {":scheme", "http"}}, "missing pseudo-header"},
        Malformed{"MissingMethod", Fields{{":scheme", "http"}, {":path", "/a"}}, "missing pseudo-header"},
        Malformed{"EmptyPath", Fields{{":method", "POST"}, {":scheme", "http"}, {":path", ""}}, "empty pseudo-header"},
        Malformed{"UppercaseName", with(kBase, {"Content-Type", "application/grpc"}), "invalid header name"},
        Malformed{"ValueWithNewline", with(kBase, {"x-note", "a\r\nb"}), "invalid header value"},
        Malformed{"ConnectionHeader", with(kBase, {"connection", "keep-alive"}), "connection-specific header"},
        Malformed{"TeGzip", with(kBase, {"te", "gzip"}), "te other than trailers"},
        Malformed{"TwoContentTypes",
                  with(with(kBase, {"content-type", "application/grpc"}), {"content-type", "application/grpc"}),
                  "duplicate content-type"}),
    [](const auto& param_info) { return std::string(param_info.param.name); });

// Issue 39, item 5: the log names the field and the class of the byte that failed (before, a
// control byte in :authority was logged as "holds NUL, CR or LF").
TEST(RequestHead, TheDetailNamesTheFieldAndTheByte) {
  struct Case {
    Fields fields;
    std::string detail;
  };
  for (const auto& c : std::vector<Case>{
           {with(kBase, {":authority", std::string("a\x01" "b")}), ":authority holds a control byte 0x01"},
           {with(kBase, {":authority", std::string("a\x7f")}), ":authority holds a DEL (0x7f)"},
           {with(kBase, {"x-note", std::string("a\0b", 3)}), "x-note holds a NUL byte (0x00)"},
           {with(kBase, {"x-note", "a\rb"}), "x-note holds a CR (0x0d)"},
           {with(kBase, {"x-note", "a\nb"}), "x-note holds an LF (0x0a)"},
           {with(kBase, {"Content-Type", "application/grpc"}), "holds an uppercase letter 'C'"},
           {with(kBase, {std::string("x\x02y"), "v"}), "holds a control byte 0x02"},
       }) {
    auto reader = read(c.fields);
    ASSERT_TRUE(reader.failed()) << c.detail;
    EXPECT_NE(reader.problem()->detail.find(c.detail), std::string::npos) << reader.problem()->detail;
  }
}

TEST(RequestHead, HeaderListOverTheBoundIsTooLarge) {
  RequestHeadReader reader;
  for (const auto& [n, v] : kBase) ASSERT_TRUE(reader.add(n, v));
  bool accepted = true;
  for (int i = 0; i < 64 && accepted; ++i) accepted = reader.add("x-pad", std::string(1000, 'v'));
  EXPECT_FALSE(accepted);
  EXPECT_TRUE(reader.too_large());
  EXPECT_EQ(reader.problem()->kind, "header list too large");
}

TEST(GrpcRefusal, NamesWhatGrpcCannotServe) {
  auto head_of = [](Fields f) { return read(f).head(); };
  Fields ok = with(with(kBase, {"content-type", "application/grpc+proto"}), {"te", "trailers"});
  EXPECT_FALSE(grpc_refusal(head_of(ok)).has_value());

  Fields get = {{":method", "GET"}, {":scheme", "http"}, {":path", "/a.B/C"}, {"content-type", "application/grpc"},
                {"te", "trailers"}};
  auto r = grpc_refusal(head_of(get));
  ASSERT_TRUE(r);
  EXPECT_STREQ(r->http_status, "405");

  r = grpc_refusal(head_of(with(with(kBase, {"content-type", "application/grpcx"}), {"te", "trailers"})));
  ASSERT_TRUE(r);
  EXPECT_STREQ(r->http_status, "415");

  r = grpc_refusal(head_of(with(kBase, {"content-type", "application/grpc"})));
  ASSERT_TRUE(r);
  EXPECT_NE(r->status.message.find("te: trailers"), std::string::npos);

  r = grpc_refusal(head_of(with(ok, {"grpc-encoding", "gzip"})));
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status.code, Code::Unimplemented);
  EXPECT_TRUE(r->advertise_identity_encoding);
  EXPECT_FALSE(grpc_refusal(head_of(with(ok, {"grpc-encoding", "identity"}))).has_value());
}

TEST(Printable, EscapesControlsAndBoundsLength) {
  EXPECT_EQ(printable("a\nb\\"), "a\\x0ab\\x5c");
  EXPECT_EQ(printable(std::string(300, 'x'), 4), "xxxx...(300 bytes)");
}

}  // namespace
}  // namespace kgpu::rpc
