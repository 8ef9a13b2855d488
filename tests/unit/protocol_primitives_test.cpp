#include <gtest/gtest.h>

#include <cstdio>
#include <set>
#include <string>

#include "kwire/protocol/bytes.hpp"
#include "kwire/protocol/header.hpp"
#include "kwire/protocol/messages/api_versions.hpp"
#include "kwire/version.hpp"

using namespace kwire::protocol;

namespace {
Bytes hex(std::initializer_list<int> v) {
  Bytes b;
  for (int x : v) b.push_back(static_cast<std::uint8_t>(x));
  return b;
}
}  // namespace

TEST(Primitives, FixedWidthBigEndian) {
  Bytes out;
  Writer w(out);
  w.i16(0x0102);
  w.i32(-2);
  w.i64(0x0102030405060708LL);
  EXPECT_EQ(out, hex({1, 2, 0xff, 0xff, 0xff, 0xfe, 1, 2, 3, 4, 5, 6, 7, 8}));
  Reader r(out);
  EXPECT_EQ(r.i16(), 0x0102);
  EXPECT_EQ(r.i32(), -2);
  EXPECT_EQ(r.i64(), 0x0102030405060708LL);
  EXPECT_TRUE(r.ok());
  EXPECT_TRUE(r.empty());
}

TEST(Primitives, ZigZagVarintKnownVectors) {
  // Protocol guide / protobuf zig-zag: 0->0, -1->1, 1->2, -2->3, 63->126, -64->127, 64->128 (0x80 0x01)
  struct Case {
    std::int64_t v;
    Bytes enc;
  } cases[] = {{0, hex({0})},        {-1, hex({1})},           {1, hex({2})},
               {-2, hex({3})},       {63, hex({0x7e})},        {-64, hex({0x7f})},
               {64, hex({0x80, 1})}, {300, hex({0xd8, 0x04})}, {INT32_MIN, hex({0xff, 0xff, 0xff, 0xff, 0x0f})}};
  for (auto& c : cases) {
    Bytes out;
    Writer w(out);
    w.varlong(c.v);
    EXPECT_EQ(out, c.enc) << c.v;
    Reader r(out);
    EXPECT_EQ(r.varlong(), c.v);
    EXPECT_TRUE(r.ok());
    EXPECT_EQ(varint_size(c.v), c.enc.size());
  }
  Bytes out;
  Writer w(out);
  w.varint(INT32_MAX);
  Reader r(out);
  EXPECT_EQ(r.varint(), INT32_MAX);
}

TEST(Primitives, UnsignedVarintOverflowIsError) {
  Bytes six = hex({0xff, 0xff, 0xff, 0xff, 0xff, 0x01});
  Reader r(six);
  (void)r.uvarint();
  EXPECT_FALSE(r.ok());
  Bytes big = hex({0xff, 0xff, 0xff, 0xff, 0x7f});  // > 32 bits
  Reader r2(big);
  (void)r2.uvarint();
  EXPECT_FALSE(r2.ok());
}

TEST(Primitives, StringsClassicAndCompact) {
  Bytes out;
  Writer w(out);
  w.string("ab", false);
  w.string("ab", true);
  w.nullable_string(std::nullopt, false);
  w.nullable_string(std::nullopt, true);
  w.nullable_string(std::string(), true);
  EXPECT_EQ(out, hex({0, 2, 'a', 'b', 3, 'a', 'b', 0xff, 0xff, 0, 1}));
  Reader r(out);
  EXPECT_EQ(r.string(false), "ab");
  EXPECT_EQ(r.string(true), "ab");
  EXPECT_EQ(r.nullable_string(false), std::nullopt);
  EXPECT_EQ(r.nullable_string(true), std::nullopt);
  EXPECT_EQ(r.nullable_string(true), std::optional<std::string>(""));
  EXPECT_TRUE(r.ok());
}

TEST(Primitives, StickyErrorOnTruncation) {
  Bytes b = hex({0, 10, 'a'});  // string claims 10 bytes, has 1
  Reader r(b);
  EXPECT_EQ(r.string(false), "");
  EXPECT_FALSE(r.ok());
  EXPECT_EQ(r.i32(), 0);  // later reads return zero
  EXPECT_FALSE(r.ok());
  EXPECT_STREQ(r.error(), "length exceeds remaining bytes");
}

TEST(Primitives, HostileArrayLengthRejectedBeforeAllocation) {
  Bytes b = hex({0x7f, 0xff, 0xff, 0xff});
  Reader r(b);
  EXPECT_FALSE(r.array_length(false).has_value());
  EXPECT_FALSE(r.ok());
}

TEST(Header, RequestHeaderV2KeepsClassicClientId) {
  ApiVersionsRequest req;
  req.client_software_name = "kwire";
  req.client_software_version = "0.1";
  Bytes frame = encode_request_frame(req, 3, 7, std::string("c"));
  // size, key 18, version 3, corr 7, client id int16 len 1 'c', header tags 0,
  // body: compact "kwire", compact "0.1", tags 0
  Bytes expect =
      hex({0, 0, 0, 23, 0, 18, 0, 3, 0, 0, 0, 7, 0, 1, 'c', 0, 6, 'k', 'w', 'i', 'r', 'e', 4, '0', '.', '1', 0});
  EXPECT_EQ(frame, expect);
}

TEST(Message, ApiVersionsRoundTripEveryVersion) {
  for (std::int16_t v = ApiVersionsResponse::min_version; v <= ApiVersionsResponse::max_version; ++v) {
    ApiVersionsResponse m;
    m.api_keys = {{1, 4, 17, {}}, {3, 0, 12, {}}};
    if (v >= 1) m.throttle_time_ms = 42;
    if (v >= 3) {
      m.supported_features = {{"metadata.version", 1, 21, {}}};
      m.finalized_features_epoch = 9;
      m.unknown_tagged_fields = {{77, hex({1, 2, 3})}};
    }
    Bytes frame = encode_response_frame(m, v, 99);
    Reader r(ByteSpan(frame).subspan(4));
    ApiVersionsResponse back;
    ResponseHeader h;
    ASSERT_TRUE(decode_response(r, back, v, &h)) << r.error();
    EXPECT_EQ(h.correlation_id, 99);
    EXPECT_EQ(back, m) << "version " << v;
    EXPECT_TRUE(r.empty());
    EXPECT_EQ(encoded_size(m, v) + 4 + 4, frame.size());
  }
}

TEST(Message, UndeclaredVersionThrows) { EXPECT_THROW(encode(ApiVersionsRequest{}, 9), ProtocolError); }

TEST(Uuid, TextFormsOfKnownBytes) {
  Uuid u;
  for (std::size_t i = 0; i < 16; ++i) u.bytes[i] = static_cast<std::uint8_t>(0x10 * (i % 16) + i);
  // Bytes 00 11 22 ... ff, written as Java's UUID.toString() does.
  EXPECT_EQ(u.to_string(), "00112233-4455-6677-8899-aabbccddeeff");
  EXPECT_EQ(Uuid{}.to_string(), "00000000-0000-0000-0000-000000000000");
  EXPECT_EQ(u.to_base64(), "ABEiM0RVZneImaq7zN3u_w");
}

TEST(Uuid, RandomIsVersion4AndDistinct) {
  std::set<std::string> seen;
  for (int i = 0; i < 2000; ++i) {
    const Uuid u = Uuid::random();
    EXPECT_FALSE(u.is_zero());
    EXPECT_EQ(u.bytes[6] >> 4, 4);       // version
    EXPECT_EQ(u.bytes[8] & 0xc0, 0x80);  // RFC 4122 variant
    EXPECT_NE(u.to_base64().front(), '-');
    const std::string text = u.to_string();
    ASSERT_EQ(text.size(), 36u);
    EXPECT_EQ(text[14], '4');
    EXPECT_NE(std::string("89ab").find(text[19]), std::string::npos) << text;
    for (std::size_t k : {8u, 13u, 18u, 23u}) EXPECT_EQ(text[k], '-');
    seen.insert(text);
  }
  EXPECT_EQ(seen.size(), 2000u);
}

TEST(Version, ComesFromTheProjectVersion) {
  EXPECT_EQ(kwire::version(), KWIRE_VERSION_STRING);
  int major = -1, minor = -1, patch = -1;
  ASSERT_EQ(std::sscanf(KWIRE_VERSION_STRING, "%d.%d.%d", &major, &minor, &patch), 3);
  EXPECT_EQ(major, KWIRE_VERSION_MAJOR);
  EXPECT_EQ(minor, KWIRE_VERSION_MINOR);
  EXPECT_EQ(patch, KWIRE_VERSION_PATCH);
}
