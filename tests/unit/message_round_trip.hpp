// Round trips shared by the message tests: a request or response frame is
// encoded, its header and body decoded back to an equal message with every
// byte consumed, and re-encoding gives the same bytes.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <initializer_list>
#include <string>

#include "kwire/protocol/messages.hpp"

namespace kwire::protocol::testing {

inline Bytes bytes_of(std::initializer_list<int> v) {
  Bytes b;
  for (int x : v) b.push_back(static_cast<std::uint8_t>(x));
  return b;
}

// Request frame -> header + body -> the same message, every byte consumed.
template <class M>
inline void request_round_trip(const M& m, std::int16_t v) {
  SCOPED_TRACE(std::string(api_name(M::api_key)) + "Request v" + std::to_string(v));
  Bytes frame = encode_request_frame(m, v, 77, std::string("round-trip-test"));
  ASSERT_GE(frame.size(), 4u);
  EXPECT_EQ(load_be32(frame.data()), frame.size() - 4);
  Reader r(ByteSpan(frame).subspan(4));
  RequestHeader h;
  decode_request_header(r, h, request_header_version(is_flexible<M>(v)));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(h.api_key, static_cast<std::int16_t>(M::api_key));
  EXPECT_EQ(h.api_version, v);
  EXPECT_EQ(h.correlation_id, 77);
  EXPECT_EQ(encoded_size(m, v), r.remaining());
  M back;
  decode(r, back, v);
  ASSERT_TRUE(r.ok()) << r.error() << " at " << r.error_offset();
  EXPECT_TRUE(r.empty()) << r.remaining() << " bytes left";
  EXPECT_EQ(back, m);
  EXPECT_EQ(encode(back, v), encode(m, v));
}

template <class M>
inline void response_round_trip(const M& m, std::int16_t v) {
  SCOPED_TRACE(std::string(api_name(M::api_key)) + "Response v" + std::to_string(v));
  Bytes frame = encode_response_frame(m, v, 88);
  ASSERT_GE(frame.size(), 4u);
  Reader r(ByteSpan(frame).subspan(4));
  M back;
  ResponseHeader h;
  ASSERT_TRUE(decode_response(r, back, v, &h)) << r.error() << " at " << r.error_offset();
  EXPECT_EQ(h.correlation_id, 88);
  EXPECT_TRUE(r.empty()) << r.remaining() << " bytes left";
  EXPECT_EQ(back, m);
  EXPECT_EQ(encode(back, v), encode(m, v));
}

}  // namespace kwire::protocol::testing
