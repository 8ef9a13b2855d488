// Share-group messages (KIP-932): declared ranges, round trips at every
// version with every field filled, and hand-checked bytes for ShareFetch's
// piggy-backed acknowledgements and its acquired-records answer.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/messages.hpp"
#include "message_filler.hpp"
#include "message_round_trip.hpp"

using namespace kwire::protocol;
using namespace kwire::protocol::testing;

TEST(ShareMessages, DeclaredVersionRanges) {
  // Kafka 4.4.0's specs; v0 of the first four was 4.0's early access, removed in 4.1.
  EXPECT_EQ(static_cast<int>(ShareGroupHeartbeatRequest::api_key), 76);
  EXPECT_EQ(ShareGroupHeartbeatRequest::min_version, 1);
  EXPECT_EQ(ShareGroupHeartbeatRequest::max_version, 1);
  EXPECT_EQ(static_cast<int>(ShareGroupDescribeRequest::api_key), 77);
  EXPECT_EQ(static_cast<int>(ShareFetchRequest::api_key), 78);
  EXPECT_EQ(ShareFetchRequest::min_version, 1);
  EXPECT_EQ(ShareFetchRequest::max_version, 2);
  EXPECT_EQ(static_cast<int>(ShareAcknowledgeRequest::api_key), 79);
  EXPECT_EQ(ShareAcknowledgeRequest::max_version, 2);
  EXPECT_EQ(static_cast<int>(DescribeShareGroupOffsetsRequest::api_key), 90);
  EXPECT_EQ(DescribeShareGroupOffsetsRequest::max_version, 1);
  EXPECT_EQ(static_cast<int>(AlterShareGroupOffsetsRequest::api_key), 91);
  EXPECT_EQ(static_cast<int>(DeleteShareGroupOffsetsRequest::api_key), 92);
  EXPECT_EQ(api_name(ApiKey::share_fetch), "ShareFetch");
  EXPECT_EQ(api_name(ApiKey::delete_share_group_offsets), "DeleteShareGroupOffsets");
}

TEST(ShareMessages, RoundTripEveryVersion) {
  EXPECT_EQ((round_trip_all_versions<ShareGroupHeartbeatRequest, ShareGroupHeartbeatResponse>()), 1);
  EXPECT_EQ((round_trip_all_versions<ShareGroupDescribeRequest, ShareGroupDescribeResponse>()), 1);
  EXPECT_EQ((round_trip_all_versions<ShareFetchRequest, ShareFetchResponse>()), 2);
  EXPECT_EQ((round_trip_all_versions<ShareAcknowledgeRequest, ShareAcknowledgeResponse>()), 2);
  EXPECT_EQ((round_trip_all_versions<DescribeShareGroupOffsetsRequest, DescribeShareGroupOffsetsResponse>()), 2);
  EXPECT_EQ((round_trip_all_versions<AlterShareGroupOffsetsRequest, AlterShareGroupOffsetsResponse>()), 1);
  EXPECT_EQ((round_trip_all_versions<DeleteShareGroupOffsetsRequest, DeleteShareGroupOffsetsResponse>()), 1);
}

TEST(ShareMessages, ShareFetchCarriesAcknowledgementsAndV2Fields) {
  ShareFetchRequest m;
  m.group_id = "g";
  m.member_id = "m";
  m.share_session_epoch = 1;
  m.max_wait_ms = 500;
  m.min_bytes = 1;
  m.max_bytes = 1024;
  m.max_records = 10;
  m.batch_size = 10;
  m.share_acquire_mode = 1;
  m.is_renew_ack = true;
  ShareFetchRequest::FetchTopic t;
  t.topic_id.bytes[15] = 7;
  // Offsets 4..6: accept, release, reject, one type each.
  t.partitions.push_back({0, {{4, 6, {kAcknowledgeAccept, kAcknowledgeRelease, kAcknowledgeReject}, {}}}, {}});
  m.topics.push_back(t);
  Bytes expected =
      bytes_of({2, 'g', 2, 'm', 0, 0, 0, 1, 0, 0, 1, 0xf4, 0, 0, 0, 1, 0, 0, 4, 0, 0, 0, 0, 10, 0, 0, 0, 10});
  Bytes v1 = expected;
  for (int b : {1, 1}) expected.push_back(b);  // v2: acquire mode 1, renew ack true
  Bytes tail = bytes_of({2});                  // one topic
  for (int i = 0; i < 15; ++i) tail.push_back(0);
  for (int b : {7, 2, 0, 0, 0, 0, 2}) tail.push_back(b);  // id, one partition 0, one batch
  for (int b : {0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 6, 4, 1, 2, 3, 0, 0, 0, 1, 0}) tail.push_back(b);
  expected.insert(expected.end(), tail.begin(), tail.end());
  v1.insert(v1.end(), tail.begin(), tail.end());
  EXPECT_EQ(encode(m, 2), expected);
  EXPECT_EQ(encode(m, 1), v1);
}

TEST(ShareMessages, ShareFetchAnswerNamesTheAcquiredRangesAndTheirDeliveryCount) {
  ShareFetchResponse r;
  r.acquisition_lock_timeout_ms = 30000;
  ShareFetchResponse::ShareFetchableTopicResponse t;
  ShareFetchResponse::PartitionData p;
  p.partition_index = 2;
  p.acknowledge_error_code = static_cast<std::int16_t>(ErrorCode::invalid_record_state);
  p.current_leader = {1, 3, {}};
  p.acquired_records = {{10, 19, 1, {}}, {20, 20, 2, {}}};
  t.partitions.push_back(p);
  r.responses.push_back(t);
  Bytes b = encode(r, 1);
  Reader rd{ByteSpan(b)};
  ShareFetchResponse back;
  decode(rd, back, 1);
  ASSERT_TRUE(rd.ok() && rd.empty());
  EXPECT_EQ(back.acquisition_lock_timeout_ms, 30000);
  auto& bp = back.responses.at(0).partitions.at(0);
  EXPECT_EQ(bp.acknowledge_error_code, 121);
  ASSERT_EQ(bp.acquired_records.size(), 2u);
  EXPECT_EQ(bp.acquired_records[1].first_offset, 20);
  EXPECT_EQ(bp.acquired_records[1].delivery_count, 2);
  EXPECT_EQ(bp.current_leader.leader_epoch, 3);
}
