// SaslHandshake and SaslAuthenticate: declared ranges, round trips at every
// version, and hand-checked body bytes for the classic and flexible shapes.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/messages.hpp"
#include "message_round_trip.hpp"

using namespace kwire::protocol;
using namespace kwire::protocol::testing;

namespace {

TaggedFields extra_tag(std::uint32_t tag) { return {{tag, bytes_of({0x33, 0x07})}}; }

}  // namespace

TEST(SaslMessages, DeclaredVersionRanges) {
  EXPECT_EQ(static_cast<int>(SaslHandshakeRequest::api_key), 17);
  EXPECT_EQ(SaslHandshakeRequest::min_version, 0);
  EXPECT_EQ(SaslHandshakeRequest::max_version, 1);
  EXPECT_EQ(SaslHandshakeRequest::flexible_since, kNeverFlexible);
  EXPECT_EQ(SaslHandshakeResponse::max_version, 1);
  EXPECT_EQ(static_cast<int>(SaslAuthenticateRequest::api_key), 36);
  EXPECT_EQ(SaslAuthenticateRequest::max_version, 2);
  EXPECT_EQ(SaslAuthenticateRequest::flexible_since, 2);
  EXPECT_EQ(SaslAuthenticateResponse::max_version, 2);
  EXPECT_EQ(SaslAuthenticateResponse::flexible_since, 2);
}

TEST(SaslMessages, HandshakeRoundTripEveryVersion) {
  for (std::int16_t v = 0; v <= 1; ++v) {
    SaslHandshakeRequest rq;
    rq.mechanism = "SCRAM-SHA-512";
    request_round_trip(rq, v);
    request_round_trip(SaslHandshakeRequest{}, v);
    SaslHandshakeResponse rs;
    rs.error_code = 33;
    rs.mechanisms = {"PLAIN", "SCRAM-SHA-256", "OAUTHBEARER"};
    response_round_trip(rs, v);
    response_round_trip(SaslHandshakeResponse{}, v);
  }
}

TEST(SaslMessages, AuthenticateRoundTripEveryVersion) {
  for (std::int16_t v = 0; v <= 2; ++v) {
    const bool flex = v >= 2;
    SaslAuthenticateRequest rq;
    rq.auth_bytes = bytes_of({0, 'u', 0, 'p'});
    if (flex) rq.unknown_tagged_fields = extra_tag(5);
    request_round_trip(rq, v);
    request_round_trip(SaslAuthenticateRequest{}, v);

    SaslAuthenticateResponse rs;
    rs.error_code = 58;
    rs.error_message = "Authentication failed";
    rs.auth_bytes = bytes_of({'v', '=', 'x'});
    if (v >= 1) rs.session_lifetime_ms = 3600000;
    if (flex) rs.unknown_tagged_fields = extra_tag(2);
    response_round_trip(rs, v);
    response_round_trip(SaslAuthenticateResponse{}, v);
  }
}

TEST(SaslMessages, HandshakeV1Bytes) {
  SaslHandshakeRequest rq;
  rq.mechanism = "PLAIN";
  EXPECT_EQ(encode(rq, 1), bytes_of({0x00, 0x05, 'P', 'L', 'A', 'I', 'N'}));
  SaslHandshakeResponse rs;
  rs.mechanisms = {"PLAIN"};
  EXPECT_EQ(encode(rs, 1), bytes_of({0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x05, 'P', 'L', 'A', 'I', 'N'}));
}

TEST(SaslMessages, AuthenticateClassicAndCompactBytes) {
  SaslAuthenticateRequest rq;
  rq.auth_bytes = bytes_of({0x01, 0x02});
  EXPECT_EQ(encode(rq, 0), bytes_of({0x00, 0x00, 0x00, 0x02, 0x01, 0x02}));
  EXPECT_EQ(encode(rq, 2), bytes_of({0x03, 0x01, 0x02, 0x00}));

  SaslAuthenticateResponse rs;
  rs.auth_bytes = bytes_of({0xaa});
  rs.session_lifetime_ms = 0x0102;
  // v0: no lifetime; null message is a classic NULLABLE_STRING (-1).
  EXPECT_EQ(encode(rs, 0), bytes_of({0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, 0xaa}));
  EXPECT_EQ(encode(rs, 1),
            bytes_of({0x00, 0x00, 0xff, 0xff, 0x00, 0x00, 0x00, 0x01, 0xaa, 0, 0, 0, 0, 0, 0, 0x01, 0x02}));
  // v2: compact null string (0), compact bytes (len+1), tagged-field block.
  EXPECT_EQ(encode(rs, 2), bytes_of({0x00, 0x00, 0x00, 0x02, 0xaa, 0, 0, 0, 0, 0, 0, 0x01, 0x02, 0x00}));
}
