// DeleteRecords and CreatePartitions: declared ranges, round trips at every
// version, and hand-checked bytes for one classic and one flexible version.
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

TaggedFields extra_tag(std::uint32_t tag) { return {{tag, bytes_of({0x5a, 0x01})}}; }

// Builders fill every field; unknown tags only where the version is flexible
// (a classic version has nowhere to put them).

DeleteRecordsRequest delete_records_request(std::int16_t v) {
  const bool flex = is_flexible<DeleteRecordsRequest>(v);
  DeleteRecordsRequest m;
  DeleteRecordsRequest::DeleteRecordsTopic a;
  a.name = "orders";
  a.partitions.push_back({0, 120, {}});
  a.partitions.push_back({3, -1, flex ? extra_tag(4) : TaggedFields{}});
  DeleteRecordsRequest::DeleteRecordsTopic b;
  b.name = "audit";
  b.partitions.push_back({1, 1LL << 40, {}});
  if (flex) b.unknown_tagged_fields = extra_tag(9);
  m.topics = {a, b};
  m.timeout_ms = 4500;
  if (flex) m.unknown_tagged_fields = extra_tag(30);
  return m;
}

DeleteRecordsResponse delete_records_response(std::int16_t v) {
  const bool flex = is_flexible<DeleteRecordsResponse>(v);
  DeleteRecordsResponse m;
  m.throttle_time_ms = 12;
  DeleteRecordsResponse::DeleteRecordsTopicResult a;
  a.name = "orders";
  a.partitions.push_back({0, 120, 0, {}});
  a.partitions.push_back({3, -1, 1, flex ? extra_tag(2) : TaggedFields{}});  // OFFSET_OUT_OF_RANGE
  m.topics = {a};
  if (flex) m.unknown_tagged_fields = extra_tag(31);
  return m;
}

CreatePartitionsRequest create_partitions_request(std::int16_t v) {
  const bool flex = is_flexible<CreatePartitionsRequest>(v);
  CreatePartitionsRequest m;
  CreatePartitionsRequest::CreatePartitionsTopic a;
  a.name = "orders";
  a.count = 6;  // null assignments: the cluster places them
  CreatePartitionsRequest::CreatePartitionsTopic b;
  b.name = "audit";
  b.count = 3;
  b.assignments = std::vector<CreatePartitionsRequest::CreatePartitionsAssignment>{
      {{1, 2}, flex ? extra_tag(5) : TaggedFields{}}, {{2, 3}, {}}};
  if (flex) b.unknown_tagged_fields = extra_tag(6);
  m.topics = {a, b};
  m.timeout_ms = 9000;
  m.validate_only = true;
  if (flex) m.unknown_tagged_fields = extra_tag(40);
  return m;
}

CreatePartitionsResponse create_partitions_response(std::int16_t v) {
  const bool flex = is_flexible<CreatePartitionsResponse>(v);
  CreatePartitionsResponse m;
  m.throttle_time_ms = 3;
  m.results.push_back({"orders", 0, std::nullopt, {}});
  m.results.push_back({"audit", 37, std::string("Topic already has 3 partitions."),
                       flex ? extra_tag(1) : TaggedFields{}});  // INVALID_PARTITIONS
  if (flex) m.unknown_tagged_fields = extra_tag(41);
  return m;
}

template <class M, class Make, class Check>
int every_version(Make make, Check check) {
  int n = 0;
  for (std::int16_t v = M::min_version; v <= M::max_version; ++v) {
    check(make(v), v);
    check(M{}, v);
    ++n;
  }
  return n;
}

}  // namespace

TEST(AdminMessages, DeclaredVersionRanges) {
  EXPECT_EQ(DeleteRecordsRequest::api_key, ApiKey::delete_records);
  EXPECT_EQ(static_cast<int>(DeleteRecordsRequest::api_key), 21);
  EXPECT_EQ(DeleteRecordsRequest::min_version, 0);
  EXPECT_EQ(DeleteRecordsRequest::max_version, 2);
  EXPECT_EQ(DeleteRecordsRequest::flexible_since, 2);
  EXPECT_EQ(DeleteRecordsResponse::max_version, DeleteRecordsRequest::max_version);
  EXPECT_EQ(DeleteRecordsResponse::flexible_since, DeleteRecordsRequest::flexible_since);

  EXPECT_EQ(CreatePartitionsRequest::api_key, ApiKey::create_partitions);
  EXPECT_EQ(static_cast<int>(CreatePartitionsRequest::api_key), 37);
  EXPECT_EQ(CreatePartitionsRequest::min_version, 0);
  EXPECT_EQ(CreatePartitionsRequest::max_version, 3);
  EXPECT_EQ(CreatePartitionsRequest::flexible_since, 2);
  EXPECT_EQ(CreatePartitionsResponse::max_version, CreatePartitionsRequest::max_version);
  EXPECT_EQ(CreatePartitionsResponse::flexible_since, CreatePartitionsRequest::flexible_since);
  EXPECT_EQ(api_name(ApiKey::delete_records), "DeleteRecords");
  EXPECT_EQ(api_name(ApiKey::create_partitions), "CreatePartitions");
}

TEST(AdminMessages, DeleteRecordsRoundTripEveryVersion) {
  EXPECT_EQ(every_version<DeleteRecordsRequest>(delete_records_request, request_round_trip<DeleteRecordsRequest>), 3);
  EXPECT_EQ(every_version<DeleteRecordsResponse>(delete_records_response, response_round_trip<DeleteRecordsResponse>),
            3);
}

TEST(AdminMessages, CreatePartitionsRoundTripEveryVersion) {
  EXPECT_EQ(
      every_version<CreatePartitionsRequest>(create_partitions_request, request_round_trip<CreatePartitionsRequest>),
      4);
  EXPECT_EQ(every_version<CreatePartitionsResponse>(create_partitions_response,
                                                    response_round_trip<CreatePartitionsResponse>),
            4);
}

TEST(AdminMessages, DeleteRecordsV1Bytes) {
  DeleteRecordsRequest m;
  m.topics.push_back({"t", {{2, 5, {}}}, {}});
  m.timeout_ms = 1000;
  Bytes body = encode(m, 1);
  Bytes expect = bytes_of({
      0, 0, 0,    1,                 // topics: int32 count
      0, 1, 't',                     // name: int16 length
      0, 0, 0,    1,                 // partitions: int32 count
      0, 0, 0,    2,                 // partition index
      0, 0, 0,    0,    0, 0, 0, 5,  // offset
      0, 0, 0x03, 0xe8,              // timeout 1000 ms
  });
  EXPECT_EQ(body, expect);
}

TEST(AdminMessages, DeleteRecordsV2IsCompact) {
  DeleteRecordsRequest m;
  m.topics.push_back({"t", {{2, 5, {}}}, {}});
  m.timeout_ms = 1000;
  Bytes expect = bytes_of({
      2,                               // topics: compact count + 1
      2, 't',                          // name: compact length + 1
      2,                               // partitions: compact count + 1
      0, 0,   0,    2,                 // partition index
      0, 0,   0,    0,    0, 0, 0, 5,  // offset
      0,                               // partition tag block
      0,                               // topic tag block
      0, 0,   0x03, 0xe8,              // timeout
      0,                               // top-level tag block
  });
  EXPECT_EQ(encode(m, 2), expect);

  // A v2 response from a broker: one partition, new low watermark 5.
  Bytes resp = bytes_of({
      0, 0, 0,   0,              // throttle
      2, 2, 't',                 // one topic "t"
      2, 0, 0,   0, 2,           // one partition, index 2
      0, 0, 0,   0, 0, 0, 0, 5,  // low watermark
      0, 0,                      // error code
      0, 0, 0,                   // tag blocks: partition, topic, top level
  });
  Reader r{ByteSpan(resp)};
  DeleteRecordsResponse back;
  decode(r, back, 2);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r.empty());
  ASSERT_EQ(back.topics.size(), 1u);
  ASSERT_EQ(back.topics[0].partitions.size(), 1u);
  EXPECT_EQ(back.topics[0].partitions[0].low_watermark, 5);
}

TEST(AdminMessages, CreatePartitionsNullAssignmentsBytes) {
  CreatePartitionsRequest m;
  m.topics.push_back({"t", 4, std::nullopt, {}});
  m.timeout_ms = 1000;
  Bytes v0 = bytes_of({
      0,    0,    0,    1,     // topics
      0,    1,    't',         // name
      0,    0,    0,    4,     // count
      0xff, 0xff, 0xff, 0xff,  // assignments: null (-1)
      0,    0,    0x03, 0xe8,  // timeout
      0,                       // validate only
  });
  EXPECT_EQ(encode(m, 0), v0);
  Bytes v3 = bytes_of({
      2,                 // topics (compact)
      2, 't',            // name (compact)
      0, 0, 0, 4,        // count
      0,                 // assignments: compact null
      0,                 // topic tag block
      0, 0, 0x03, 0xe8,  // timeout
      0,                 // validate only
      0,                 // top-level tag block
  });
  EXPECT_EQ(encode(m, 3), v3);
  Reader r{ByteSpan(v3)};
  CreatePartitionsRequest back;
  decode(r, back, 3);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(back, m);
  EXPECT_FALSE(back.topics[0].assignments.has_value());
}

TEST(AdminMessages, TruncatedResponsesFail) {
  for (std::int16_t v = 0; v <= 2; ++v) {
    Bytes full = encode(delete_records_response(v), v);
    for (std::size_t n = 0; n < full.size(); ++n) {
      Reader r(ByteSpan(full).first(n));
      DeleteRecordsResponse back;
      decode(r, back, v);
      EXPECT_FALSE(r.ok() && r.empty()) << "prefix " << n << " of v" << v << " decoded";
    }
  }
  for (std::int16_t v = 0; v <= 3; ++v) {
    Bytes full = encode(create_partitions_response(v), v);
    for (std::size_t n = 0; n < full.size(); ++n) {
      Reader r(ByteSpan(full).first(n));
      CreatePartitionsResponse back;
      decode(r, back, v);
      EXPECT_FALSE(r.ok() && r.empty()) << "prefix " << n << " of v" << v << " decoded";
    }
  }
}
