// OffsetForLeaderEpoch: declared range, round trips at every version, and
// hand-checked bytes for a classic (v2) and the flexible (v4) version.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>

#include "kwire/protocol/messages.hpp"
#include "message_round_trip.hpp"

using namespace kwire::protocol;
using namespace kwire::protocol::testing;

namespace {

using Request = OffsetForLeaderEpochRequest;
using Response = OffsetForLeaderEpochResponse;

TaggedFields extra_tag(std::uint32_t tag) { return {{tag, bytes_of({0x5a, 0x01})}}; }

// Every field a version has gets a non-default value; fields it does not have
// keep their defaults (so that the decoded message compares equal).
Request request(std::int16_t v) {
  const bool flex = is_flexible<Request>(v);
  Request m;
  if (v >= 3) m.replica_id = Request::kConsumerReplicaId;
  Request::OffsetForLeaderTopic a;
  a.topic = "orders";
  Request::OffsetForLeaderPartition p0;
  p0.partition = 0;
  p0.leader_epoch = 4;
  if (v >= 2) p0.current_leader_epoch = 5;
  Request::OffsetForLeaderPartition p3;
  p3.partition = 3;
  p3.leader_epoch = 0;
  if (flex) p3.unknown_tagged_fields = extra_tag(2);
  a.partitions = {p0, p3};
  Request::OffsetForLeaderTopic b;
  b.topic = "audit";
  b.partitions = {p0};
  if (flex) b.unknown_tagged_fields = extra_tag(3);
  m.topics = {a, b};
  if (flex) m.unknown_tagged_fields = extra_tag(20);
  return m;
}

Response response(std::int16_t v) {
  const bool flex = is_flexible<Response>(v);
  Response m;
  if (v >= 2) m.throttle_time_ms = 7;
  Response::EpochEndOffset ok;
  ok.partition = 0;
  ok.end_offset = 1200;
  if (v >= 1) ok.leader_epoch = 4;
  Response::EpochEndOffset fenced;
  fenced.partition = 3;
  fenced.error_code = static_cast<std::int16_t>(ErrorCode::fenced_leader_epoch);
  if (flex) fenced.unknown_tagged_fields = extra_tag(1);
  m.topics = {{"orders", {ok, fenced}, flex ? extra_tag(5) : TaggedFields{}}};
  if (flex) m.unknown_tagged_fields = extra_tag(21);
  return m;
}

}  // namespace

TEST(OffsetForLeaderEpoch, DeclaredVersionRange) {
  EXPECT_EQ(static_cast<int>(Request::api_key), 23);
  EXPECT_EQ(Request::api_key, ApiKey::offset_for_leader_epoch);
  EXPECT_EQ(Response::api_key, ApiKey::offset_for_leader_epoch);
  EXPECT_EQ(Request::min_version, 0);  // Kafka 3.x accepts 0-4, 4.x 2-4 (KIP-896)
  EXPECT_EQ(Request::max_version, 4);
  EXPECT_EQ(Request::flexible_since, 4);
  EXPECT_EQ(Response::min_version, Request::min_version);
  EXPECT_EQ(Response::max_version, Request::max_version);
  EXPECT_EQ(Response::flexible_since, Request::flexible_since);
  EXPECT_EQ(api_name(ApiKey::offset_for_leader_epoch), "OffsetForLeaderEpoch");
  // A consumer's request by default.
  EXPECT_EQ(Request{}.replica_id, -1);
}

TEST(OffsetForLeaderEpoch, RoundTripEveryVersion) {
  for (std::int16_t v = Request::min_version; v <= Request::max_version; ++v) {
    request_round_trip(request(v), v);
    request_round_trip(Request{}, v);
    response_round_trip(response(v), v);
    response_round_trip(Response{}, v);
  }
}

TEST(OffsetForLeaderEpoch, FieldsOfLaterVersionsAreNotSent) {
  Request m = request(4);
  m.unknown_tagged_fields.clear();
  m.topics[0].partitions[1].unknown_tagged_fields.clear();
  m.topics[1].unknown_tagged_fields.clear();
  // v0 and v1 have no current leader epoch, v0-v2 no replica id.
  EXPECT_EQ(encoded_size(m, 0), encoded_size(m, 1));
  EXPECT_EQ(encoded_size(m, 2), encoded_size(m, 1) + 3 * 4);
  EXPECT_EQ(encoded_size(m, 3), encoded_size(m, 2) + 4);
  const Bytes v1 = encode(m, 1);
  Reader r{ByteSpan(v1)};
  Request back;
  decode(r, back, 1);
  ASSERT_TRUE(r.ok() && r.empty());
  EXPECT_EQ(back.topics[0].partitions[0].current_leader_epoch, -1);
  EXPECT_EQ(back.topics[0].partitions[0].leader_epoch, 4);
}

TEST(OffsetForLeaderEpoch, V2RequestBytes) {
  Request m;
  m.topics.push_back({"t", {{1, 5, 4, {}}}, {}});
  const Bytes frame = encode_request_frame(m, 2, 9, std::nullopt);
  const Bytes expect = bytes_of({
      0, 0, 0, 33,  // size
      0, 23,        // api key: OffsetForLeaderEpoch
      0, 2,         // version 2
      0, 0, 0, 9,   // correlation id
      0xff, 0xff,   // null client id
                    // (no replica id before v3)
      0, 0, 0, 1,   // topics: int32 count
      0, 1, 't',    // topic: int16 length
      0, 0, 0, 1,   // partitions: int32 count
      0, 0, 0, 1,   // partition 1
      0, 0, 0, 5,   // current leader epoch 5
      0, 0, 0, 4,   // leader epoch 4
  });
  EXPECT_EQ(frame, expect);
}

TEST(OffsetForLeaderEpoch, V4RequestAndResponseBytes) {
  Request m;
  m.topics.push_back({"t", {{1, 5, 4, {}}}, {}});
  const Bytes frame = encode_request_frame(m, 4, 9, std::string("c"));
  const Bytes expect = bytes_of({
      0,    0,    0,    35,    // size
      0,    23,                // api key
      0,    4,                 // version 4
      0,    0,    0,    9,     // correlation id
      0,    1,    'c',         // client id (classic string, even in header v2)
      0,                       // header tag block
      0xff, 0xff, 0xff, 0xff,  // replica id -1 (consumer)
      2,                       // topics: compact count + 1
      2,    't',               // topic: compact length + 1
      2,                       // partitions: compact count + 1
      0,    0,    0,    1,     // partition 1
      0,    0,    0,    5,     // current leader epoch
      0,    0,    0,    4,     // leader epoch
      0,                       // partition tag block
      0,                       // topic tag block
      0,                       // top-level tag block
  });
  EXPECT_EQ(frame, expect);

  // A v4 response as a broker sends it (header v1: correlation id, tag block).
  const Bytes resp = bytes_of({
      0,    0,    0,    0,                             // throttle time
      2,                                               // topics
      2,    't',                                       // topic
      3,                                               // partitions: 2
      0,    0,    0,    0,    0,    1,                 // no error, partition 1
      0,    0,    0,    4,                             // leader epoch 4
      0,    0,    0,    0,    0,    0,    0,    0x64,  // end offset 100
      0,                                               // partition tag block
      0,    0x4b, 0,    0,    0,    2,                 // UNKNOWN_LEADER_EPOCH (75), partition 2
      0xff, 0xff, 0xff, 0xff,                          // leader epoch -1
      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  // end offset -1
      0,                                               // partition tag block
      0,                                               // topic tag block
      0,                                               // top-level tag block
  });
  Reader r{ByteSpan(resp)};
  Response back;
  decode(r, back, 4);
  ASSERT_TRUE(r.ok()) << r.error() << " at " << r.error_offset();
  EXPECT_TRUE(r.empty());
  ASSERT_EQ(back.topics.size(), 1u);
  EXPECT_EQ(back.topics[0].topic, "t");
  ASSERT_EQ(back.topics[0].partitions.size(), 2u);
  const auto& a = back.topics[0].partitions[0];
  EXPECT_EQ(a.error_code, 0);
  EXPECT_EQ(a.partition, 1);
  EXPECT_EQ(a.leader_epoch, 4);
  EXPECT_EQ(a.end_offset, 100);
  const auto& b = back.topics[0].partitions[1];
  EXPECT_EQ(b.error_code, static_cast<std::int16_t>(ErrorCode::unknown_leader_epoch));
  EXPECT_EQ(b.partition, 2);
  EXPECT_EQ(b.leader_epoch, -1);
  EXPECT_EQ(b.end_offset, -1);
  EXPECT_EQ(encode(back, 4), resp);
}

TEST(OffsetForLeaderEpoch, V0ResponseHasNoEpochOrThrottle) {
  const Bytes resp = bytes_of({
      0, 0, 0,   1,                    // topics
      0, 1, 't',                       // topic
      0, 0, 0,   1,                    // partitions
      0, 0,                            // error code
      0, 0, 0,   0,                    // partition 0
      0, 0, 0,   0, 0, 0, 0x01, 0x00,  // end offset 256
  });
  Reader r{ByteSpan(resp)};
  Response back;
  decode(r, back, 0);
  ASSERT_TRUE(r.ok() && r.empty());
  EXPECT_EQ(back.throttle_time_ms, 0);
  EXPECT_EQ(back.topics.at(0).partitions.at(0).leader_epoch, -1);
  EXPECT_EQ(back.topics.at(0).partitions.at(0).end_offset, 256);
  for (std::size_t n = 0; n < resp.size(); ++n) {
    Reader pr(ByteSpan(resp).first(n));
    Response partial;
    decode(pr, partial, 0);
    EXPECT_FALSE(pr.ok() && pr.empty()) << "prefix " << n << " decoded";
  }
}
