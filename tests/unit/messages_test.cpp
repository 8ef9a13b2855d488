#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "kwire/protocol/messages.hpp"

using namespace kwire::protocol;

namespace {

Bytes hex(std::initializer_list<int> v) {
  Bytes b;
  for (int x : v) b.push_back(static_cast<std::uint8_t>(x));
  return b;
}

Uuid make_uuid(std::uint8_t seed) {
  Uuid u;
  for (std::size_t i = 0; i < u.bytes.size(); ++i) u.bytes[i] = static_cast<std::uint8_t>(seed + i * 7);
  return u;
}

// Record bytes the Records views in these tests point at (contents are opaque
// to the message layer, so any bytes do).
const Bytes& record_bytes() {
  static const Bytes b = hex({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x2a, 0xde, 0xad, 0xbe, 0xef, 2, 1, 2, 3});
  return b;
}
Records some_records() { return Records{ByteSpan(record_bytes())}; }

// An unknown tag in the given struct, to check it is carried through unchanged.
TaggedFields unknown_tags(std::uint32_t tag) { return {{tag, hex({0x11, 0x22, 0x33})}}; }

template <class M>
bool flexible(std::int16_t v) {
  return is_flexible<M>(v);
}

// Encodes `m` as a request frame, decodes header and body back, and checks that
// nothing is lost, that every byte is consumed and that encoded_size agrees.
template <class M>
void check_request(const M& m, std::int16_t v) {
  SCOPED_TRACE(std::string(api_name(M::api_key)) + "Request v" + std::to_string(v));
  Bytes frame = encode_request_frame(m, v, 1234, std::string("kwire-test"));
  ASSERT_GE(frame.size(), 4u);
  EXPECT_EQ(load_be32(frame.data()), frame.size() - 4);

  Reader r(ByteSpan(frame).subspan(4));
  RequestHeader h;
  decode_request_header(r, h, request_header_version(flexible<M>(v)));
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_EQ(h.api_key, static_cast<std::int16_t>(M::api_key));
  EXPECT_EQ(h.api_version, v);
  EXPECT_EQ(h.correlation_id, 1234);
  EXPECT_EQ(h.client_id, std::optional<std::string>("kwire-test"));
  EXPECT_EQ(encoded_size(m, v), r.remaining());

  M back;
  decode(r, back, v);
  ASSERT_TRUE(r.ok()) << r.error() << " at " << r.error_offset();
  EXPECT_TRUE(r.empty()) << r.remaining() << " bytes left over";
  EXPECT_EQ(back, m);
  EXPECT_EQ(encode(back, v), encode(m, v));
}

template <class M>
void check_response(const M& m, std::int16_t v) {
  SCOPED_TRACE(std::string(api_name(M::api_key)) + "Response v" + std::to_string(v));
  Bytes frame = encode_response_frame(m, v, 4321);
  ASSERT_GE(frame.size(), 4u);
  EXPECT_EQ(load_be32(frame.data()), frame.size() - 4);
  ByteSpan payload = ByteSpan(frame).subspan(4);

  // Size of the header, to compare encoded_size with the body alone.
  Reader hr(payload);
  ResponseHeader skipped;
  decode_response_header(hr, skipped, response_header_version(M::api_key, flexible<M>(v)));
  ASSERT_TRUE(hr.ok());
  EXPECT_EQ(encoded_size(m, v), hr.remaining());

  Reader r(payload);
  M back;
  ResponseHeader h;
  ASSERT_TRUE(decode_response(r, back, v, &h)) << r.error() << " at " << r.error_offset();
  EXPECT_EQ(h.correlation_id, 4321);
  EXPECT_TRUE(r.empty()) << r.remaining() << " bytes left over";
  EXPECT_EQ(back, m);
  EXPECT_EQ(encode(back, v), encode(m, v));
}

// ------------------------------------------------------------ builders
// Each builder fills every field that exists at version v (and only those),
// sets tagged fields to non-default values where the version has them, and
// adds unknown tags at flexible versions.

MetadataRequest make_metadata_request(std::int16_t v) {
  MetadataRequest m;
  std::vector<MetadataRequest::MetadataRequestTopic> topics(2);
  topics[0].name = "orders";
  topics[1].name = "payments";
  if (v >= 10) topics[0].topic_id = make_uuid(1);
  if (v >= 12) {
    topics[1].name.reset();
    topics[1].topic_id = make_uuid(2);
  }
  if (flexible<MetadataRequest>(v)) topics[0].unknown_tagged_fields = unknown_tags(5);
  m.topics = topics;
  if (v >= 4) m.allow_auto_topic_creation = false;
  if (v >= 8 && v <= 10) m.include_cluster_authorized_operations = true;
  if (v >= 8) m.include_topic_authorized_operations = true;
  if (flexible<MetadataRequest>(v)) m.unknown_tagged_fields = unknown_tags(90);
  return m;
}

MetadataResponse make_metadata_response(std::int16_t v) {
  MetadataResponse m;
  if (v >= 3) m.throttle_time_ms = 17;
  MetadataResponse::MetadataResponseBroker b1{1, "broker-1", 9092, std::nullopt, {}};
  MetadataResponse::MetadataResponseBroker b2{2, "broker-2", 9093, std::nullopt, {}};
  if (v >= 1) b2.rack = "rack-b";
  if (flexible<MetadataResponse>(v)) b1.unknown_tagged_fields = unknown_tags(3);
  m.brokers = {b1, b2};
  if (v >= 2) m.cluster_id = "cluster-xyz";
  if (v >= 1) m.controller_id = 2;

  MetadataResponse::MetadataResponsePartition p;
  p.error_code = 0;
  p.partition_index = 3;
  p.leader_id = 1;
  if (v >= 7) p.leader_epoch = 12;
  p.replica_nodes = {1, 2};
  p.isr_nodes = {1};
  if (v >= 5) p.offline_replicas = {2};
  if (flexible<MetadataResponse>(v)) p.unknown_tagged_fields = unknown_tags(44);

  MetadataResponse::MetadataResponseTopic t;
  t.error_code = 0;
  t.name = "orders";
  if (v >= 10) t.topic_id = make_uuid(9);
  if (v >= 1) t.is_internal = true;
  t.partitions = {p, p};
  t.partitions[1].partition_index = 4;
  if (v >= 8) t.topic_authorized_operations = 0x0ff8;

  MetadataResponse::MetadataResponseTopic missing;
  missing.error_code = static_cast<std::int16_t>(ErrorCode::unknown_topic_or_partition);
  missing.name = "nope";
  if (v >= 12) {
    missing.name.reset();
    missing.error_code = static_cast<std::int16_t>(ErrorCode::unknown_topic_id);
    missing.topic_id = make_uuid(50);
  }
  m.topics = {t, missing};
  if (v >= 8 && v <= 10) m.cluster_authorized_operations = 0x70;
  if (v >= 13) m.error_code = static_cast<std::int16_t>(ErrorCode::rebootstrap_required);
  if (flexible<MetadataResponse>(v)) m.unknown_tagged_fields = unknown_tags(91);
  return m;
}

ListOffsetsRequest make_list_offsets_request(std::int16_t v) {
  ListOffsetsRequest m;
  m.replica_id = -1;
  if (v >= 2) m.isolation_level = 1;
  ListOffsetsRequest::ListOffsetsPartition p0;
  p0.partition_index = 0;
  p0.timestamp = ListOffsetsRequest::kTimestampLatest;
  if (v >= 4) p0.current_leader_epoch = 6;
  if (v == 0) p0.max_num_offsets = 5;
  ListOffsetsRequest::ListOffsetsPartition p1 = p0;
  p1.partition_index = 1;
  p1.timestamp = 1'700'000'000'000;
  if (flexible<ListOffsetsRequest>(v)) p1.unknown_tagged_fields = unknown_tags(7);
  m.topics = {{"orders", {p0, p1}, {}}, {"audit", {}, {}}};
  if (v >= 10) m.timeout_ms = 30000;
  if (flexible<ListOffsetsRequest>(v)) m.unknown_tagged_fields = unknown_tags(92);
  return m;
}

ListOffsetsResponse make_list_offsets_response(std::int16_t v) {
  ListOffsetsResponse m;
  if (v >= 2) m.throttle_time_ms = 3;
  ListOffsetsResponse::ListOffsetsPartitionResponse p;
  p.partition_index = 2;
  p.error_code = 0;
  if (v == 0) p.old_style_offsets = {120, 100, 0};
  if (v >= 1) {
    p.timestamp = 1'700'000'000'123;
    p.offset = 120;
  }
  if (v >= 4) p.leader_epoch = 8;
  ListOffsetsResponse::ListOffsetsPartitionResponse err;
  err.partition_index = 3;
  err.error_code = static_cast<std::int16_t>(ErrorCode::not_leader_or_follower);
  if (flexible<ListOffsetsResponse>(v)) err.unknown_tagged_fields = unknown_tags(1);
  m.topics = {{"orders", {p, err}, {}}};
  if (flexible<ListOffsetsResponse>(v)) m.unknown_tagged_fields = unknown_tags(93);
  return m;
}

FetchRequest make_fetch_request(std::int16_t v) {
  FetchRequest m;
  const bool flex = flexible<FetchRequest>(v);
  if (flex) m.cluster_id = "cluster-xyz";
  if (v <= 14) m.replica_id = -1;
  if (v >= 15) m.replica_state = {3, 77, {}};
  m.max_wait_ms = 500;
  m.min_bytes = 1;
  if (v >= 3) m.max_bytes = 52428800;
  if (v >= 4) m.isolation_level = 1;
  if (v >= 7) {
    m.session_id = 0x1234;
    m.session_epoch = 3;
  }
  FetchRequest::FetchPartition p;
  p.partition = 0;
  if (v >= 9) p.current_leader_epoch = 4;
  p.fetch_offset = 1000;
  if (v >= 12) p.last_fetched_epoch = 3;
  if (v >= 5) p.log_start_offset = 10;
  p.partition_max_bytes = 1 << 20;
  if (v >= 17) p.replica_directory_id = make_uuid(33);
  if (v >= 18) p.high_watermark = 990;
  if (flex) p.unknown_tagged_fields = unknown_tags(9);
  FetchRequest::FetchPartition p2 = p;
  p2.partition = 1;
  p2.unknown_tagged_fields.clear();

  FetchRequest::FetchTopic t;
  if (v <= 12) t.topic = "orders";
  if (v >= 13) t.topic_id = make_uuid(9);
  t.partitions = {p, p2};
  m.topics = {t};
  if (v >= 7) {
    FetchRequest::ForgottenTopic f;
    if (v <= 12) f.topic = "old-topic";
    if (v >= 13) f.topic_id = make_uuid(10);
    f.partitions = {0, 5, 7};
    m.forgotten_topics_data = {f};
  }
  if (v >= 11) m.rack_id = "rack-a";
  if (flex) m.unknown_tagged_fields = unknown_tags(94);
  return m;
}

FetchResponse make_fetch_response(std::int16_t v) {
  FetchResponse m;
  const bool flex = flexible<FetchResponse>(v);
  if (v >= 1) m.throttle_time_ms = 25;
  if (v >= 7) {
    m.error_code = 0;
    m.session_id = 0x1234;
  }
  FetchResponse::PartitionData p;
  p.partition_index = 0;
  p.error_code = 0;
  p.high_watermark = 1500;
  if (v >= 4) {
    p.last_stable_offset = 1400;
    p.aborted_transactions = std::vector<FetchResponse::AbortedTransaction>{{7001, 1300, {}}, {7002, 1350, {}}};
  }
  if (v >= 5) p.log_start_offset = 100;
  if (flex) {
    p.diverging_epoch = {5, 1200, {}};
    p.current_leader = {2, 6, {}};
    p.snapshot_id = {1000, 4, {}};
    p.unknown_tagged_fields = unknown_tags(12);
  }
  if (v >= 11) p.preferred_read_replica = 3;
  p.records = some_records();

  FetchResponse::PartitionData empty;  // null records, null aborted list
  empty.partition_index = 1;
  empty.error_code = static_cast<std::int16_t>(ErrorCode::offset_out_of_range);
  empty.high_watermark = -1;
  if (flex) empty.current_leader = {4, 9, {}};

  FetchResponse::FetchableTopicResponse t;
  if (v <= 12) t.topic = "orders";
  if (v >= 13) t.topic_id = make_uuid(9);
  t.partitions = {p, empty};
  if (flex) t.unknown_tagged_fields = unknown_tags(2);
  m.responses = {t};
  if (v >= 16) m.node_endpoints = {{2, "broker-2", 9093, std::string("rack-b"), {}}, {4, "broker-4", 9095, {}, {}}};
  if (flex) m.unknown_tagged_fields = unknown_tags(95);
  return m;
}

ProduceRequest make_produce_request(std::int16_t v) {
  ProduceRequest m;
  const bool flex = flexible<ProduceRequest>(v);
  if (v >= 3) m.transactional_id = "txn-1";
  m.acks = -1;
  m.timeout_ms = 30000;
  ProduceRequest::TopicProduceData t;
  if (v <= 12) t.name = "orders";
  if (v >= 13) t.topic_id = make_uuid(9);
  t.partition_data = {{0, some_records(), {}}, {1, Records{}, {}}};
  if (flex) t.partition_data[0].unknown_tagged_fields = unknown_tags(4);
  m.topic_data = {t};
  if (flex) m.unknown_tagged_fields = unknown_tags(96);
  return m;
}

ProduceResponse make_produce_response(std::int16_t v) {
  ProduceResponse m;
  const bool flex = flexible<ProduceResponse>(v);
  ProduceResponse::PartitionProduceResponse ok;
  ok.index = 0;
  ok.error_code = 0;
  ok.base_offset = 4242;
  if (v >= 2) ok.log_append_time_ms = 1'700'000'000'999;
  if (v >= 5) ok.log_start_offset = 7;
  ProduceResponse::PartitionProduceResponse bad;
  bad.index = 1;
  bad.error_code = static_cast<std::int16_t>(ErrorCode::invalid_record);
  bad.base_offset = -1;
  if (v >= 8) {
    bad.record_errors = {{3, std::string("null key on compacted topic"), {}}, {5, std::nullopt, {}}};
    bad.error_message = "one or more records were rejected";
  }
  if (v >= 10) {
    bad.current_leader = {3, 11, {}};
    bad.unknown_tagged_fields = unknown_tags(6);
  }
  ProduceResponse::TopicProduceResponse t;
  if (v <= 12) t.name = "orders";
  if (v >= 13) t.topic_id = make_uuid(9);
  t.partition_responses = {ok, bad};
  m.responses = {t};
  if (v >= 1) m.throttle_time_ms = 9;
  if (v >= 10) m.node_endpoints = {{3, "broker-3", 9094, std::nullopt, {}}};
  if (flex) m.unknown_tagged_fields = unknown_tags(97);
  return m;
}

CreateTopicsRequest make_create_topics_request(std::int16_t v) {
  CreateTopicsRequest m;
  const bool flex = flexible<CreateTopicsRequest>(v);
  CreateTopicsRequest::CreatableTopic a;
  a.name = "orders";
  a.num_partitions = 6;
  a.replication_factor = 3;
  a.configs = {{"cleanup.policy", std::string("compact"), {}}, {"retention.ms", std::nullopt, {}}};
  if (flex) a.configs[0].unknown_tagged_fields = unknown_tags(8);
  CreateTopicsRequest::CreatableTopic b;
  b.name = "manual";
  b.num_partitions = -1;
  b.replication_factor = -1;
  b.assignments = {{0, {1, 2}, {}}, {1, {2, 3}, {}}};
  m.topics = {a, b};
  m.timeout_ms = 15000;
  if (v >= 1) m.validate_only = true;
  if (flex) m.unknown_tagged_fields = unknown_tags(98);
  return m;
}

CreateTopicsResponse make_create_topics_response(std::int16_t v) {
  CreateTopicsResponse m;
  const bool flex = flexible<CreateTopicsResponse>(v);
  if (v >= 2) m.throttle_time_ms = 4;
  CreateTopicsResponse::CreatableTopicResult ok;
  ok.name = "orders";
  if (v >= 7) ok.topic_id = make_uuid(9);
  ok.error_code = 0;
  if (v >= 5) {
    ok.num_partitions = 6;
    ok.replication_factor = 3;
    ok.configs = std::vector<CreateTopicsResponse::CreatableTopicConfigs>{
        {"cleanup.policy", std::string("compact"), false, 1, false, {}},
        {"sasl.jaas.config", std::nullopt, true, 5, true, {}}};
    ok.topic_config_error_code = static_cast<std::int16_t>(ErrorCode::topic_authorization_failed);
  }
  CreateTopicsResponse::CreatableTopicResult dup;
  dup.name = "existing";
  dup.error_code = static_cast<std::int16_t>(ErrorCode::topic_already_exists);
  if (v >= 1) dup.error_message = "Topic 'existing' already exists.";
  if (flex) dup.unknown_tagged_fields = unknown_tags(3);
  m.topics = {ok, dup};
  if (flex) m.unknown_tagged_fields = unknown_tags(99);
  return m;
}

DeleteTopicsRequest make_delete_topics_request(std::int16_t v) {
  DeleteTopicsRequest m;
  const bool flex = flexible<DeleteTopicsRequest>(v);
  if (v >= 6) {
    m.topics = {{std::string("orders"), Uuid{}, {}}, {std::nullopt, make_uuid(9), {}}};
    m.topics[1].unknown_tagged_fields = unknown_tags(2);
  } else {
    m.topic_names = {"orders", "payments"};
  }
  m.timeout_ms = 20000;
  if (flex) m.unknown_tagged_fields = unknown_tags(100);
  return m;
}

DeleteTopicsResponse make_delete_topics_response(std::int16_t v) {
  DeleteTopicsResponse m;
  const bool flex = flexible<DeleteTopicsResponse>(v);
  if (v >= 1) m.throttle_time_ms = 2;
  DeleteTopicsResponse::DeletableTopicResult a;
  a.name = "orders";
  if (v >= 6) a.topic_id = make_uuid(9);
  DeleteTopicsResponse::DeletableTopicResult b;
  b.name = "payments";
  b.error_code = static_cast<std::int16_t>(ErrorCode::topic_deletion_disabled);
  if (v >= 5) b.error_message = "Topic deletion is disabled.";
  if (v >= 6) {
    b.name.reset();
    b.topic_id = make_uuid(11);
    b.error_code = static_cast<std::int16_t>(ErrorCode::unknown_topic_id);
  }
  if (flex) b.unknown_tagged_fields = unknown_tags(1);
  m.responses = {a, b};
  if (flex) m.unknown_tagged_fields = unknown_tags(101);
  return m;
}

template <class M, class Make>
int round_trip_all_versions(Make make, void (*check)(const M&, std::int16_t)) {
  int n = 0;
  for (std::int16_t v = M::min_version; v <= M::max_version; ++v) {
    check(make(v), v);
    // A default-constructed message must round-trip too (no tagged fields written).
    check(M{}, v);
    ++n;
  }
  return n;
}

}  // namespace

// ---------------------------------------------------- declared version ranges

TEST(Messages, DeclaredVersionRanges) {
  EXPECT_EQ(MetadataRequest::min_version, 0);
  EXPECT_EQ(MetadataRequest::max_version, 13);
  EXPECT_EQ(MetadataRequest::flexible_since, 9);
  EXPECT_EQ(ListOffsetsRequest::max_version, 11);
  EXPECT_EQ(ListOffsetsRequest::flexible_since, 6);
  EXPECT_EQ(FetchRequest::max_version, 18);
  EXPECT_EQ(FetchRequest::flexible_since, 12);
  EXPECT_EQ(ProduceRequest::max_version, 13);
  EXPECT_EQ(ProduceRequest::flexible_since, 9);
  EXPECT_EQ(CreateTopicsRequest::max_version, 7);
  EXPECT_EQ(CreateTopicsRequest::flexible_since, 5);
  EXPECT_EQ(DeleteTopicsRequest::max_version, 6);
  EXPECT_EQ(DeleteTopicsRequest::flexible_since, 4);
  // Requests and responses of one API always share the range.
  EXPECT_EQ(MetadataResponse::max_version, MetadataRequest::max_version);
  EXPECT_EQ(ListOffsetsResponse::max_version, ListOffsetsRequest::max_version);
  EXPECT_EQ(FetchResponse::max_version, FetchRequest::max_version);
  EXPECT_EQ(ProduceResponse::max_version, ProduceRequest::max_version);
  EXPECT_EQ(CreateTopicsResponse::max_version, CreateTopicsRequest::max_version);
  EXPECT_EQ(DeleteTopicsResponse::max_version, DeleteTopicsRequest::max_version);
}

// ------------------------------------------------- round trips, every version

TEST(Messages, MetadataRoundTripEveryVersion) {
  EXPECT_EQ(round_trip_all_versions<MetadataRequest>(make_metadata_request, check_request<MetadataRequest>), 14);
  EXPECT_EQ(round_trip_all_versions<MetadataResponse>(make_metadata_response, check_response<MetadataResponse>), 14);
  // From v1 a null topic list means "all topics" and must survive the trip.
  for (std::int16_t v = 1; v <= MetadataRequest::max_version; ++v) {
    MetadataRequest all;
    all.topics.reset();
    check_request(all, v);
    MetadataRequest none;
    none.topics.emplace();
    check_request(none, v);
  }
}

TEST(Messages, ListOffsetsRoundTripEveryVersion) {
  EXPECT_EQ(round_trip_all_versions<ListOffsetsRequest>(make_list_offsets_request, check_request<ListOffsetsRequest>),
            12);
  EXPECT_EQ(
      round_trip_all_versions<ListOffsetsResponse>(make_list_offsets_response, check_response<ListOffsetsResponse>),
      12);
}

TEST(Messages, FetchRoundTripEveryVersion) {
  EXPECT_EQ(round_trip_all_versions<FetchRequest>(make_fetch_request, check_request<FetchRequest>), 19);
  EXPECT_EQ(round_trip_all_versions<FetchResponse>(make_fetch_response, check_response<FetchResponse>), 19);
}

TEST(Messages, ProduceRoundTripEveryVersion) {
  EXPECT_EQ(round_trip_all_versions<ProduceRequest>(make_produce_request, check_request<ProduceRequest>), 14);
  EXPECT_EQ(round_trip_all_versions<ProduceResponse>(make_produce_response, check_response<ProduceResponse>), 14);
}

TEST(Messages, CreateTopicsRoundTripEveryVersion) {
  EXPECT_EQ(
      round_trip_all_versions<CreateTopicsRequest>(make_create_topics_request, check_request<CreateTopicsRequest>), 8);
  EXPECT_EQ(
      round_trip_all_versions<CreateTopicsResponse>(make_create_topics_response, check_response<CreateTopicsResponse>),
      8);
}

TEST(Messages, DeleteTopicsRoundTripEveryVersion) {
  EXPECT_EQ(
      round_trip_all_versions<DeleteTopicsRequest>(make_delete_topics_request, check_request<DeleteTopicsRequest>), 7);
  EXPECT_EQ(
      round_trip_all_versions<DeleteTopicsResponse>(make_delete_topics_response, check_response<DeleteTopicsResponse>),
      7);
}

TEST(Messages, FieldsAbsentFromAVersionAreNotWritten) {
  // A value set on a field the version does not have is dropped, not sent.
  MetadataResponse m = make_metadata_response(13);
  Bytes v0 = encode(m, 0);
  MetadataResponse back;
  Reader r(v0);
  decode(r, back, 0);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(back.throttle_time_ms, 0);
  EXPECT_EQ(back.controller_id, -1);
  EXPECT_EQ(back.error_code, 0);
  EXPECT_FALSE(back.cluster_id.has_value());
  ASSERT_EQ(back.topics.size(), 2u);
  EXPECT_EQ(back.topics[0].partitions[0].leader_epoch, -1);
}

TEST(Messages, TaggedFieldsAtDefaultAreOmitted) {
  // v12 Fetch response: a partition whose tagged fields hold their defaults
  // ends with an empty tag block (a single 0 byte).
  FetchResponse m;
  FetchResponse::PartitionData p;
  p.records = Records{};
  m.responses = {{"t", Uuid{}, {p}, {}}};
  FetchResponse with_tag = m;
  with_tag.responses[0].partitions[0].current_leader = {1, 2, {}};
  // The block's count byte goes from 0 to 1; then tag and size (1 byte each)
  // and the value: leader (4) + epoch (4) + its own empty tag block (1).
  EXPECT_EQ(encoded_size(with_tag, 12), encoded_size(m, 12) + 2 + 9);
  // Below v12 there is no tag block at all and the value is simply dropped.
  EXPECT_EQ(encoded_size(with_tag, 11), encoded_size(m, 11));
}

// ------------------------------------------------------ hand-written bytes

TEST(KnownBytes, MetadataV1RequestForOneTopic) {
  MetadataRequest m;
  m.topics = std::vector<MetadataRequest::MetadataRequestTopic>{{Uuid{}, std::string("t"), {}}};
  Bytes frame = encode_request_frame(m, 1, 1, std::string("c"));
  Bytes expect = hex({
      0, 0, 0,   18,  // size
      0, 3,           // api key: Metadata
      0, 1,           // api version 1
      0, 0, 0,   1,   // correlation id
      0, 1, 'c',      // client id (int16 length)
      0, 0, 0,   1,   // topics: int32 count 1
      0, 1, 't',      // name (int16 length)
  });
  EXPECT_EQ(frame, expect);

  Reader r(ByteSpan(expect).subspan(4));
  RequestHeader h;
  decode_request_header(r, h, 1);
  MetadataRequest back;
  decode(r, back, 1);
  ASSERT_TRUE(r.ok());
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(back, m);
}

TEST(KnownBytes, ListOffsetsV1Request) {
  ListOffsetsRequest m;
  m.replica_id = -1;
  ListOffsetsRequest::ListOffsetsPartition p;
  p.partition_index = 0;
  p.timestamp = ListOffsetsRequest::kTimestampLatest;
  m.topics = {{"t", {p}, {}}};
  Bytes frame = encode_request_frame(m, 1, 7, std::nullopt);
  Bytes expect = hex({
      0,    0,    0,    37,                            // size
      0,    2,                                         // api key: ListOffsets
      0,    1,                                         // version 1
      0,    0,    0,    7,                             // correlation id
      0xff, 0xff,                                      // null client id
      0xff, 0xff, 0xff, 0xff,                          // replica id -1
      0,    0,    0,    1,                             // topics: 1
      0,    1,    't',                                 // name
      0,    0,    0,    1,                             // partitions: 1
      0,    0,    0,    0,                             // partition index 0
      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  // timestamp -1 (latest)
  });
  EXPECT_EQ(frame, expect);
}

TEST(KnownBytes, FetchV12FlexibleRequest) {
  FetchRequest m;
  m.max_wait_ms = 500;
  m.min_bytes = 1;
  m.isolation_level = 1;
  FetchRequest::FetchPartition p;
  p.partition = 0;
  p.fetch_offset = 5;
  p.partition_max_bytes = 1 << 20;
  m.topics = {{"t", Uuid{}, {p}, {}}};
  Bytes frame = encode_request_frame(m, 12, 2, std::string("c"));
  Bytes expect = hex({
      0,    0,    0,    78,                            // size
      0,    1,    0,    12,                            // Fetch v12
      0,    0,    0,    2,                             // correlation id
      0,    1,    'c',                                 // client id stays int16-length in header v2
      0,                                               // header tag block
      0xff, 0xff, 0xff, 0xff,                          // replica id -1
      0,    0,    0x01, 0xf4,                          // max wait 500
      0,    0,    0,    1,                             // min bytes 1
      0x7f, 0xff, 0xff, 0xff,                          // max bytes (default)
      1,                                               // isolation: read_committed
      0,    0,    0,    0,                             // session id 0
      0xff, 0xff, 0xff, 0xff,                          // session epoch -1
      2,                                               // topics: compact count 1
      2,    't',                                       // topic: compact string
      2,                                               // partitions: compact count 1
      0,    0,    0,    0,                             // partition 0
      0xff, 0xff, 0xff, 0xff,                          // current leader epoch -1
      0,    0,    0,    0,    0,    0,    0,    5,     // fetch offset 5
      0xff, 0xff, 0xff, 0xff,                          // last fetched epoch -1
      0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,  // log start offset -1
      0,    0x10, 0,    0,                             // partition max bytes 1 MiB
      0,                                               // partition tag block
      0,                                               // topic tag block
      1,                                               // forgotten topics: empty
      1,                                               // rack id: ""
      0,                                               // request tag block
  });
  EXPECT_EQ(frame, expect);

  // The cluster id is tag 0 of the request's tag block.
  m.cluster_id = "k";
  Bytes tagged = encode(m, 12);
  Bytes tail(tagged.end() - 5, tagged.end());
  EXPECT_EQ(tail, hex({1, 0, 2, 2, 'k'}));  // one field, tag 0, 2 bytes: compact "k"
}

TEST(KnownBytes, FetchV12ResponseWithTaggedCurrentLeader) {
  Bytes payload = hex({
      0,    0,    0,    9,                  // correlation id
      0,                                    // response header v1 tag block
      0,    0,    0,    0,                  // throttle time
      0,    0,                              // error code
      0,    0,    0,    0,                  // session id
      2,                                    // responses: 1
      2,    't',                            // topic
      2,                                    // partitions: 1
      0,    0,    0,    0,                  // partition index
      0,    0,                              // error code
      0,    0,    0,    0,    0, 0, 0, 10,  // high watermark 10
      0,    0,    0,    0,    0, 0, 0, 10,  // last stable offset 10
      0,    0,    0,    0,    0, 0, 0, 0,   // log start offset 0
      0,                                    // aborted transactions: null
      0xff, 0xff, 0xff, 0xff,               // preferred read replica -1
      0,                                    // records: null
      1,                                    // partition tags: one field
      1,    9,                              // tag 1 (CurrentLeader), 9 bytes
      0,    0,    0,    5,                  //   leader id 5
      0,    0,    0,    7,                  //   leader epoch 7
      0,                                    //   its own tag block
      0,                                    // topic tag block
      0,                                    // response tag block
  });
  Reader r(payload);
  FetchResponse m;
  ResponseHeader h;
  ASSERT_TRUE(decode_response(r, m, 12, &h)) << r.error();
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(h.correlation_id, 9);
  ASSERT_EQ(m.responses.size(), 1u);
  EXPECT_EQ(m.responses[0].topic, "t");
  ASSERT_EQ(m.responses[0].partitions.size(), 1u);
  const auto& p = m.responses[0].partitions[0];
  EXPECT_EQ(p.high_watermark, 10);
  EXPECT_EQ(p.last_stable_offset, 10);
  EXPECT_EQ(p.log_start_offset, 0);
  EXPECT_FALSE(p.aborted_transactions.has_value());
  EXPECT_FALSE(p.records.data.has_value());
  EXPECT_EQ(p.current_leader.leader_id, 5);
  EXPECT_EQ(p.current_leader.leader_epoch, 7);
  EXPECT_EQ(p.diverging_epoch, FetchResponse::EpochEndOffset{});
  EXPECT_TRUE(p.unknown_tagged_fields.empty());

  Bytes frame = encode_response_frame(m, 12, 9);
  EXPECT_EQ(Bytes(frame.begin() + 4, frame.end()), payload);
}

// ------------------------------------------------------------ malformed input

TEST(Malformed, EveryPrefixOfAFetchResponseFails) {
  for (std::int16_t v : {std::int16_t{4}, std::int16_t{11}, std::int16_t{12}, std::int16_t{16}, std::int16_t{18}}) {
    SCOPED_TRACE("version " + std::to_string(v));
    Bytes frame = encode_response_frame(make_fetch_response(v), v, 1);
    ByteSpan payload = ByteSpan(frame).subspan(4);
    for (std::size_t n = 0; n < payload.size(); ++n) {
      Reader r(payload.first(n));
      FetchResponse m;
      EXPECT_FALSE(decode_response(r, m, v)) << "prefix of " << n << " bytes decoded";
      EXPECT_FALSE(r.ok());
      EXPECT_LE(r.error_offset(), n);
    }
    Reader whole(payload);
    FetchResponse m;
    EXPECT_TRUE(decode_response(whole, m, v));
  }
}

TEST(Malformed, EveryPrefixOfAMetadataResponseFails) {
  Bytes frame = encode_response_frame(make_metadata_response(12), 12, 1);
  ByteSpan payload = ByteSpan(frame).subspan(4);
  for (std::size_t n = 0; n < payload.size(); ++n) {
    Reader r(payload.first(n));
    MetadataResponse m;
    EXPECT_FALSE(decode_response(r, m, 12)) << "prefix of " << n << " bytes decoded";
  }
}

TEST(Malformed, HostileCountsAndLengthsAreRejected) {
  // Fetch v12 response claiming 2^28 topics in a handful of bytes.
  Bytes b = hex({0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x01});
  Reader r(b);
  FetchResponse m;
  EXPECT_FALSE(decode_response(r, m, 12));
  EXPECT_TRUE(m.responses.empty());

  // Classic Metadata v1 response with a broker host length of 30000.
  Bytes c = hex({0, 0, 0, 1, 0, 0, 0, 1, 0, 0, 0, 1, 0x75, 0x30, 'h'});
  Reader r2(c);
  MetadataResponse mr;
  EXPECT_FALSE(decode_response(r2, mr, 1));
}

TEST(Malformed, UndeclaredVersionsAreRefused) {
  EXPECT_THROW(encode(FetchRequest{}, 19), ProtocolError);
  EXPECT_THROW(encode(MetadataRequest{}, 14), ProtocolError);
  EXPECT_THROW(encode(ProduceRequest{}, -1), ProtocolError);
  Bytes empty;
  Reader r(empty);
  FetchResponse m;
  EXPECT_FALSE(decode_response(r, m, 99));
}
