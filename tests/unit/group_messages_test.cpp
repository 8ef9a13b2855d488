// Consumer-group messages and the consumer protocol payloads: declared
// ranges, round trips at every version with every field filled, and
// hand-checked bytes for classic and flexible versions.
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

// Gives every field a distinct non-default value (a running counter) and
// every array two elements, whatever the version: encode picks the fields
// that exist, so a field read in the wrong place changes the decoded value.
struct Filler : VisitorBase<Filler> {
  int n = 0;
  int depth = 0;
  template <class T>
  void operator()(T& x) {
    fill(x);
  }
  template <class T>
  void tagged(std::uint32_t, std::int16_t, T& x, const T& = T{}) {
    fill(x);
  }
  template <class T>
  void since(std::int16_t, T& x) {
    fill(x);
  }
  template <class T>
  void until(std::int16_t, T& x) {
    fill(x);
  }
  template <class T>
  void range(std::int16_t, std::int16_t, T& x) {
    fill(x);
  }
  template <class T>
  void fill(T& x) {
    ++n;
    if constexpr (std::is_same_v<T, bool>) {
      x = true;
    } else if constexpr (std::is_integral_v<T>) {
      x = static_cast<T>(n % 100 + 1);
    } else if constexpr (std::is_same_v<T, Uuid>) {
      for (std::size_t i = 0; i < x.bytes.size(); ++i) x.bytes[i] = static_cast<std::uint8_t>(n + i);
    } else if constexpr (std::is_same_v<T, std::string> || std::is_same_v<T, std::optional<std::string>>) {
      x = "s" + std::to_string(n);
    } else if constexpr (std::is_same_v<T, Bytes> || std::is_same_v<T, std::optional<Bytes>>) {
      x = Bytes{static_cast<std::uint8_t>(n), 2, 3};
    } else if constexpr (detail::is_vector<T>::value) {
      x.resize(depth < 3 ? 2 : 1);
      for (auto& e : x) fill(e);
    } else if constexpr (detail::is_optional<T>::value) {
      x.emplace();
      fill(*x);
    } else if constexpr (MessageStruct<T>) {
      ++depth;
      x.fields(*this);
      --depth;
    }
  }
};

// The filled message as it exists at `v`: encode at v, decode back (fields of
// other versions drop out).
template <class M>
M filled_at(std::int16_t v) {
  M m;
  Filler f;
  m.fields(f);
  Bytes b = encode(m, v);
  Reader r{ByteSpan(b)};
  M out;
  decode(r, out, v);
  EXPECT_TRUE(r.ok() && r.empty()) << api_name(M::api_key) << " v" << v;
  return out;
}

template <class Req, class Resp>
int round_trip_every_version() {
  int n = 0;
  for (std::int16_t v = Req::min_version; v <= Req::max_version; ++v) {
    Req req = filled_at<Req>(v);
    if (is_flexible<Req>(v)) req.unknown_tagged_fields = {{40, bytes_of({0x5a})}};
    request_round_trip(req, v);
    request_round_trip(Req{}, v);
    Resp resp = filled_at<Resp>(v);
    if (is_flexible<Resp>(v)) resp.unknown_tagged_fields = {{41, bytes_of({0x5b, 0x01})}};
    response_round_trip(resp, v);
    response_round_trip(Resp{}, v);
    ++n;
  }
  return n;
}

template <class M>
M decoded(const Bytes& body, std::int16_t v) {
  Reader r{ByteSpan(body)};
  M m;
  decode(r, m, v);
  EXPECT_TRUE(r.ok()) << r.error() << " at " << r.error_offset();
  EXPECT_TRUE(r.empty()) << r.remaining() << " bytes left";
  return m;
}

}  // namespace

TEST(GroupMessages, DeclaredVersionRanges) {
  // Kafka 4.4.0 and 3.9.1 kafka-clients specs.
  EXPECT_EQ(static_cast<int>(FindCoordinatorRequest::api_key), 10);
  EXPECT_EQ(FindCoordinatorRequest::max_version, 6);
  EXPECT_EQ(FindCoordinatorRequest::flexible_since, 3);
  EXPECT_EQ(static_cast<int>(JoinGroupRequest::api_key), 11);
  EXPECT_EQ(JoinGroupRequest::max_version, 9);
  EXPECT_EQ(JoinGroupRequest::flexible_since, 6);
  EXPECT_EQ(static_cast<int>(HeartbeatRequest::api_key), 12);
  EXPECT_EQ(HeartbeatRequest::max_version, 4);
  EXPECT_EQ(static_cast<int>(LeaveGroupRequest::api_key), 13);
  EXPECT_EQ(LeaveGroupRequest::max_version, 5);
  EXPECT_EQ(static_cast<int>(SyncGroupRequest::api_key), 14);
  EXPECT_EQ(SyncGroupRequest::max_version, 5);
  EXPECT_EQ(SyncGroupRequest::flexible_since, 4);
  EXPECT_EQ(static_cast<int>(DescribeGroupsRequest::api_key), 15);
  EXPECT_EQ(DescribeGroupsRequest::max_version, 6);
  EXPECT_EQ(static_cast<int>(ListGroupsRequest::api_key), 16);
  EXPECT_EQ(ListGroupsRequest::max_version, 5);
  EXPECT_EQ(static_cast<int>(OffsetCommitRequest::api_key), 8);
  EXPECT_EQ(OffsetCommitRequest::max_version, 10);
  EXPECT_EQ(OffsetCommitRequest::flexible_since, 8);
  EXPECT_EQ(static_cast<int>(OffsetFetchRequest::api_key), 9);
  EXPECT_EQ(OffsetFetchRequest::max_version, 10);
  EXPECT_EQ(OffsetFetchRequest::flexible_since, 6);
  EXPECT_EQ(static_cast<int>(OffsetDeleteRequest::api_key), 47);
  EXPECT_EQ(static_cast<int>(ConsumerGroupHeartbeatRequest::api_key), 68);
  EXPECT_EQ(ConsumerGroupHeartbeatRequest::max_version, 1);
  EXPECT_EQ(static_cast<int>(ConsumerGroupDescribeRequest::api_key), 69);
  EXPECT_EQ(ConsumerGroupDescribeRequest::max_version, 1);
  EXPECT_EQ(api_name(ApiKey::consumer_group_heartbeat), "ConsumerGroupHeartbeat");
}

TEST(GroupMessages, RoundTripEveryVersion) {
  EXPECT_EQ((round_trip_every_version<FindCoordinatorRequest, FindCoordinatorResponse>()), 7);
  EXPECT_EQ((round_trip_every_version<JoinGroupRequest, JoinGroupResponse>()), 10);
  EXPECT_EQ((round_trip_every_version<SyncGroupRequest, SyncGroupResponse>()), 6);
  EXPECT_EQ((round_trip_every_version<HeartbeatRequest, HeartbeatResponse>()), 5);
  EXPECT_EQ((round_trip_every_version<LeaveGroupRequest, LeaveGroupResponse>()), 6);
  EXPECT_EQ((round_trip_every_version<OffsetCommitRequest, OffsetCommitResponse>()), 11);
  EXPECT_EQ((round_trip_every_version<OffsetFetchRequest, OffsetFetchResponse>()), 11);
  EXPECT_EQ((round_trip_every_version<OffsetDeleteRequest, OffsetDeleteResponse>()), 1);
  EXPECT_EQ((round_trip_every_version<ListGroupsRequest, ListGroupsResponse>()), 6);
  EXPECT_EQ((round_trip_every_version<DescribeGroupsRequest, DescribeGroupsResponse>()), 7);
  EXPECT_EQ((round_trip_every_version<ConsumerGroupHeartbeatRequest, ConsumerGroupHeartbeatResponse>()), 2);
  EXPECT_EQ((round_trip_every_version<ConsumerGroupDescribeRequest, ConsumerGroupDescribeResponse>()), 2);
}

TEST(GroupMessages, JoinGroupV0AndV6Bytes) {
  JoinGroupRequest m;
  m.group_id = "g";
  m.session_timeout_ms = 10000;
  m.rebalance_timeout_ms = 300000;  // not in v0
  m.member_id = "";
  m.group_instance_id = "i";  // not in v0
  m.protocol_type = "consumer";
  m.protocols.push_back({"range", bytes_of({0, 0}), {}});
  EXPECT_EQ(encode(m, 0), bytes_of({
                              0, 1, 'g',                                       // group id
                              0, 0, 0x27, 0x10,                                // session timeout 10000
                              0, 0,                                            // member id ""
                              0, 8, 'c',  'o',  'n', 's', 'u', 'm', 'e', 'r',  // protocol type
                              0, 0, 0,    1,                                   // one protocol
                              0, 5, 'r',  'a',  'n', 'g', 'e',                 // name
                              0, 0, 0,    2,    0,   0,                        // metadata bytes
                          }));
  EXPECT_EQ(encode(m, 6), bytes_of({
                              2, 'g',                                        // compact group id
                              0, 0,    0x27, 0x10,                           // session timeout
                              0, 0x04, 0x93, 0xe0,                           // rebalance timeout 300000
                              1,                                             // member id "" (compact)
                              2, 'i',                                        // group instance id
                              9, 'c',  'o',  'n',  's', 'u', 'm', 'e', 'r',  // protocol type
                              2,                                             // one protocol (compact)
                              6, 'r',  'a',  'n',  'g', 'e',                 // name
                              3, 0,    0,                                    // metadata (compact bytes)
                              0,                                             // protocol tag block
                              0,                                             // top-level tag block
                          }));
  // A v4+ response refusing an empty member id: MEMBER_ID_REQUIRED (79) with the id to use.
  JoinGroupResponse r = decoded<JoinGroupResponse>(bytes_of({
                                                       0,    0,    0,    0,          // throttle
                                                       0,    79,                     // MEMBER_ID_REQUIRED
                                                       0xff, 0xff, 0xff, 0xff,       // generation -1
                                                       0,    0,                      // protocol name ""
                                                       0,    0,                      // leader ""
                                                       0,    3,    'c',  '-',  '1',  // member id
                                                       0,    0,    0,    0,          // no members
                                                   }),
                                                   4);
  EXPECT_EQ(r.error_code, 79);
  EXPECT_EQ(r.member_id, "c-1");
  EXPECT_EQ(r.generation_id, -1);
}

TEST(GroupMessages, OffsetCommitV2AndOffsetFetchV8Bytes) {
  OffsetCommitRequest m;
  m.group_id = "g";
  m.generation_id_or_member_epoch = 3;
  m.member_id = "m";
  m.retention_time_ms = -1;
  m.topics.push_back({"t", {{1, 42, 7, -1, std::nullopt, {}}}, {}});
  EXPECT_EQ(encode(m, 2), bytes_of({
                              0,    1,    'g',                                 // group id
                              0,    0,    0,    3,                             // generation
                              0,    1,    'm',                                 // member id
                              0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  // retention -1
                              0,    0,    0,    1,    0,    1,    't',         // one topic "t"
                              0,    0,    0,    1,    0,    0,    0,    1,     // one partition, index 1
                              0,    0,    0,    0,    0,    0,    0,    42,    // offset 42 (no epoch before v6)
                              0xff, 0xff,                                      // metadata null
                          }));
  // OffsetFetch v8: groups batched, a null topic list asks for everything.
  OffsetFetchRequest f;
  f.groups.push_back({"g", std::nullopt, -1, std::nullopt, {}});
  f.require_stable = true;
  EXPECT_EQ(encode(f, 8), bytes_of({2, 2, 'g', 0, 0, 1, 0}));  // groups, id, null topics, tags, stable, tags
  OffsetFetchResponse resp =
      decoded<OffsetFetchResponse>(bytes_of({
                                       0,    0,    0,    0,                             // throttle
                                       2,                                               // one group
                                       2,    'g',                                       // id
                                       2,    2,    't',                                 // one topic "t"
                                       2,    0,    0,    0,    0,                       // one partition 0
                                       0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  // offset -1: nothing committed
                                       0xff, 0xff, 0xff, 0xff,                          // leader epoch -1
                                       1,                                               // metadata "" (compact)
                                       0,    0,                                         // error
                                       0,    0,                                         // partition, topic tags
                                       0,    0,                                         // group error
                                       0,    0,                                         // group, top-level tags
                                   }),
                                   8);
  ASSERT_EQ(resp.groups.size(), 1u);
  ASSERT_EQ(resp.groups[0].topics.size(), 1u);
  EXPECT_EQ(resp.groups[0].topics[0].partitions[0].committed_offset, -1);
  EXPECT_EQ(resp.groups[0].topics[0].partitions[0].metadata, std::optional<std::string>(""));
}

TEST(GroupMessages, ConsumerGroupHeartbeatNullableAssignment) {
  ConsumerGroupHeartbeatRequest join;
  join.group_id = "g";
  join.member_id = "m";
  join.rebalance_timeout_ms = 300000;
  join.subscribed_topic_names = std::vector<std::string>{"t"};
  join.topic_partitions.emplace();  // [] on join, not null
  EXPECT_EQ(encode(join, 0), bytes_of({
                                 2, 'g',  2,    'm',   // group, member
                                 0, 0,    0,    0,     // epoch 0
                                 0, 0,                 // instance, rack: null
                                 0, 0x04, 0x93, 0xe0,  // rebalance timeout
                                 2, 2,    't',         // subscribed ["t"]
                                 0,                    // server assignor null
                                 1,                    // topic partitions []
                                 0,                    // tags
                             }));
  // v1 adds the regex (null) after the topic names.
  EXPECT_EQ(encode(join, 1).size(), encode(join, 0).size() + 1);

  Bytes unchanged = bytes_of({0, 0, 0, 0, 0, 0, 0, 2, 'm', 0, 0, 0, 5, 0, 0, 0x13, 0x88, 0xff, 0});
  auto a = decoded<ConsumerGroupHeartbeatResponse>(unchanged, 0);
  EXPECT_EQ(a.member_epoch, 5);
  EXPECT_EQ(a.heartbeat_interval_ms, 5000);
  EXPECT_FALSE(a.assignment.has_value());

  Bytes assigned = bytes_of({0, 0, 0, 0, 0, 0, 0, 2, 'm', 0,  0,  0,  6,  0,  0,  0x13, 0x88,
                             1,                                                        // assignment present
                             2,                                                        // one topic
                             1, 2, 3, 4, 5, 6, 7, 8, 9,   10, 11, 12, 13, 14, 15, 16,  // topic id
                             3, 0, 0, 0, 0, 0, 0, 0, 4,                                // partitions [0, 4]
                             0, 0,                                                     // topic, assignment tags
                             0});
  auto b = decoded<ConsumerGroupHeartbeatResponse>(assigned, 0);
  ASSERT_TRUE(b.assignment.has_value());
  ASSERT_EQ(b.assignment->topic_partitions.size(), 1u);
  EXPECT_EQ(b.assignment->topic_partitions[0].partitions, (std::vector<std::int32_t>{0, 4}));
  EXPECT_EQ(b.assignment->topic_partitions[0].topic_id.bytes[15], 16);
  EXPECT_EQ(encode(b, 0), assigned);
}

TEST(GroupMessages, ConsumerProtocolPayloads) {
  ConsumerProtocolSubscription s;
  s.topics = {"t"};
  s.owned_partitions.push_back({"t", {2}, {}});
  s.generation_id = 4;
  s.rack_id = "r";
  EXPECT_EQ(encode_consumer_subscription(s, 0), bytes_of({0, 0, 0, 0, 0, 1, 0, 1, 't', 0xff, 0xff, 0xff, 0xff}));
  EXPECT_EQ(encode_consumer_subscription(s, 3),
            bytes_of({0,    3,                                                    // version
                      0,    0,    0,    1,    0, 1, 't',                          // topics
                      0xff, 0xff, 0xff, 0xff,                                     // user data null
                      0,    0,    0,    1,    0, 1, 't', 0, 0, 0, 1, 0, 0, 0, 2,  // owned t-2
                      0,    0,    0,    4,                                        // generation
                      0,    1,    'r'}));                                         // rack
  for (std::int16_t v = 0; v <= 3; ++v) {
    ConsumerProtocolSubscription back;
    EXPECT_EQ(decode_consumer_subscription(ByteSpan(encode_consumer_subscription(s, v)), back), v);
    EXPECT_EQ(back.topics, s.topics);
    EXPECT_EQ(back.owned_partitions.empty(), v == 0);
    EXPECT_EQ(back.generation_id, v >= 2 ? 4 : -1);
  }
  // A newer version is read by its v3 prefix.
  Bytes v4 = encode_consumer_subscription(s, 3);
  v4[1] = 4;
  v4.push_back(0x77);
  ConsumerProtocolSubscription newer;
  EXPECT_EQ(decode_consumer_subscription(ByteSpan(v4), newer), 4);
  EXPECT_EQ(newer.rack_id, std::optional<std::string>("r"));

  ConsumerProtocolAssignment a;
  a.assigned_partitions.push_back({"t", {0, 1}, {}});
  Bytes ab = encode_consumer_assignment(a, 0);
  EXPECT_EQ(ab, bytes_of({0, 0, 0, 0, 0, 1, 0, 1, 't', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff}));
  ConsumerProtocolAssignment back;
  EXPECT_EQ(decode_consumer_assignment(ByteSpan(ab), back), 0);
  EXPECT_EQ(back, a);
  EXPECT_EQ(decode_consumer_assignment(ByteSpan(), back), -1);  // an empty assignment
  EXPECT_TRUE(back.assigned_partitions.empty());

  // Malformed payloads are typed errors.
  Bytes trailing = ab;
  trailing.push_back(0);
  EXPECT_THROW(decode_consumer_assignment(ByteSpan(trailing), back), ProtocolError);
  EXPECT_THROW(decode_consumer_assignment(ByteSpan(ab).first(ab.size() - 1), back), ProtocolError);
  EXPECT_THROW(decode_consumer_assignment(ByteSpan(bytes_of({0xff, 0xff})), back), ProtocolError);
  EXPECT_THROW(encode_consumer_assignment(a, 4), ProtocolError);
}

TEST(GroupMessages, TruncatedResponsesFail) {
  for (std::int16_t v = 0; v <= 9; ++v) {
    Bytes full = encode(filled_at<OffsetFetchResponse>(v), v);
    for (std::size_t n = 0; n < full.size(); ++n) {
      Reader r(ByteSpan(full).first(n));
      OffsetFetchResponse back;
      decode(r, back, v);
      EXPECT_FALSE(r.ok() && r.empty()) << "prefix " << n << " of v" << v << " decoded";
    }
  }
  for (std::int16_t v = 0; v <= 1; ++v) {
    Bytes full = encode(filled_at<ConsumerGroupHeartbeatResponse>(v), v);
    for (std::size_t n = 0; n < full.size(); ++n) {
      Reader r(ByteSpan(full).first(n));
      ConsumerGroupHeartbeatResponse back;
      decode(r, back, v);
      EXPECT_FALSE(r.ok() && r.empty()) << "prefix " << n << " of v" << v << " decoded";
    }
  }
}
