// The idempotence and transaction calls (InitProducerId, AddPartitionsToTxn,
// AddOffsetsToTxn, EndTxn, TxnOffsetCommit) and the transaction admin calls
// (DescribeProducers, DescribeTransactions, ListTransactions): declared
// ranges, round trips at every version, and hand-checked bytes where a
// version changes the layout.
#include <gtest/gtest.h>
#include <algorithm>

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

template <class M>
TaggedFields tags_if_flexible(std::int16_t v, std::uint32_t tag) {
  return is_flexible<M>(v) ? extra_tag(tag) : TaggedFields{};
}

InitProducerIdRequest init_request(std::int16_t v) {
  InitProducerIdRequest m;
  m.transactional_id = std::string("txn-a");
  m.transaction_timeout_ms = 60000;
  if (v >= 3) {
    m.producer_id = 4001;
    m.producer_epoch = 7;
  }
  m.unknown_tagged_fields = tags_if_flexible<InitProducerIdRequest>(v, 9);
  return m;
}

InitProducerIdResponse init_response(std::int16_t v) {
  InitProducerIdResponse m;
  m.throttle_time_ms = 5;
  m.error_code = 0;
  m.producer_id = 1LL << 40;
  m.producer_epoch = 32767;
  m.unknown_tagged_fields = tags_if_flexible<InitProducerIdResponse>(v, 3);
  return m;
}

AddPartitionsToTxnRequest add_partitions_request(std::int16_t v) {
  using M = AddPartitionsToTxnRequest;
  M m;
  M::Topic a{"orders", {0, 5}, tags_if_flexible<M>(v, 2)};
  M::Topic b{"audit", {3}, {}};
  if (v >= 4) {
    M::Transaction t;
    t.transactional_id = "txn-a";
    t.producer_id = 12;
    t.producer_epoch = 3;
    t.verify_only = true;
    t.topics = {a, b};
    t.unknown_tagged_fields = extra_tag(4);
    M::Transaction u;
    u.transactional_id = "txn-b";
    u.producer_id = 13;
    u.producer_epoch = 0;
    u.topics = {b};
    m.transactions = {t, u};
  } else {
    m.v3_and_below_transactional_id = "txn-a";
    m.v3_and_below_producer_id = 12;
    m.v3_and_below_producer_epoch = 3;
    m.v3_and_below_topics = {a, b};
  }
  m.unknown_tagged_fields = tags_if_flexible<M>(v, 11);
  return m;
}

AddPartitionsToTxnResponse add_partitions_response(std::int16_t v) {
  using M = AddPartitionsToTxnResponse;
  M m;
  m.throttle_time_ms = 1;
  M::TopicResult orders{"orders", {{0, 0, {}}, {5, 51, tags_if_flexible<M>(v, 1)}}, {}};  // CONCURRENT_TRANSACTIONS
  if (v >= 4) {
    m.error_code = 0;
    m.results_by_transaction = {{"txn-a", {orders}, extra_tag(6)}};
  } else {
    m.results_by_topic_v3_and_below = {orders};
  }
  m.unknown_tagged_fields = tags_if_flexible<M>(v, 12);
  return m;
}

AddOffsetsToTxnRequest add_offsets_request(std::int16_t v) {
  AddOffsetsToTxnRequest m{"txn-a", 12, 3, "group-1", tags_if_flexible<AddOffsetsToTxnRequest>(v, 1)};
  return m;
}

AddOffsetsToTxnResponse add_offsets_response(std::int16_t v) {
  return AddOffsetsToTxnResponse{2, 90, tags_if_flexible<AddOffsetsToTxnResponse>(v, 1)};  // PRODUCER_FENCED
}

EndTxnRequest end_txn_request(std::int16_t v) {
  return EndTxnRequest{"txn-a", 12, 3, true, tags_if_flexible<EndTxnRequest>(v, 2)};
}

EndTxnResponse end_txn_response(std::int16_t v) {
  EndTxnResponse m;
  m.throttle_time_ms = 0;
  m.error_code = 0;
  if (v >= 5) {
    m.producer_id = 12;
    m.producer_epoch = 4;
  }
  m.unknown_tagged_fields = tags_if_flexible<EndTxnResponse>(v, 7);
  return m;
}

Uuid orders_id() {
  Uuid id;
  for (std::size_t i = 0; i < id.bytes.size(); ++i) id.bytes[i] = static_cast<std::uint8_t>(0x40 + i);
  return id;
}

TxnOffsetCommitRequest txn_offset_commit_request(std::int16_t v) {
  using M = TxnOffsetCommitRequest;
  M m;
  m.transactional_id = "txn-a";
  m.group_id = "group-1";
  m.producer_id = 12;
  m.producer_epoch = 3;
  if (v >= 3) {
    m.generation_id = 9;
    m.member_id = "member-7";
    m.group_instance_id = std::string("static-1");
  }
  M::Partition p0;
  p0.partition_index = 0;
  p0.committed_offset = 1234;
  if (v >= 2) p0.committed_leader_epoch = 4;
  p0.committed_metadata = std::string("meta");
  M::Partition p1;
  p1.partition_index = 2;
  p1.committed_offset = 0;
  p1.committed_metadata = std::nullopt;
  p1.unknown_tagged_fields = tags_if_flexible<M>(v, 3);
  m.topics = {{"orders", {p0, p1}, {}}};
  if (v >= 6) m.topics[0] = {"", {p0, p1}, {}, orders_id()};  // v6 names the topic by id only
  m.unknown_tagged_fields = tags_if_flexible<M>(v, 8);
  return m;
}

TxnOffsetCommitResponse txn_offset_commit_response(std::int16_t v) {
  using M = TxnOffsetCommitResponse;
  M m;
  m.throttle_time_ms = 3;
  m.topics = {{"orders", {{0, 0, {}}, {2, 120, tags_if_flexible<M>(v, 1)}}, {}}};  // TRANSACTION_ABORTABLE
  if (v >= 6) {
    m.topics[0].name.clear();  // v6 names the topic by id only
    m.topics[0].topic_id = orders_id();
  }
  m.unknown_tagged_fields = tags_if_flexible<M>(v, 5);
  return m;
}

DescribeProducersRequest describe_producers_request(std::int16_t) {
  DescribeProducersRequest m;
  m.topics = {{"orders", {0, 1, 2}, extra_tag(1)}};
  m.unknown_tagged_fields = extra_tag(2);
  return m;
}

DescribeProducersResponse describe_producers_response(std::int16_t) {
  using M = DescribeProducersResponse;
  M m;
  m.throttle_time_ms = 0;
  M::ProducerState s;
  s.producer_id = 1000;
  s.producer_epoch = 2;
  s.last_sequence = 41;
  s.last_timestamp = 1700000000000;
  s.coordinator_epoch = 0;
  s.current_txn_start_offset = 77;
  M::Partition p0{0, 0, std::nullopt, {s}, {}};
  M::Partition p1{1, 6, std::string("not the leader"), {}, extra_tag(3)};  // NOT_LEADER_OR_FOLLOWER
  m.topics = {{"orders", {p0, p1}, {}}};
  return m;
}

DescribeTransactionsRequest describe_transactions_request(std::int16_t) {
  DescribeTransactionsRequest m;
  m.transactional_ids = {"txn-a", "txn-b"};
  return m;
}

DescribeTransactionsResponse describe_transactions_response(std::int16_t) {
  using M = DescribeTransactionsResponse;
  M m;
  M::TransactionState a;
  a.transactional_id = "txn-a";
  a.transaction_state = "Ongoing";
  a.transaction_timeout_ms = 60000;
  a.transaction_start_time_ms = 1700000000123;
  a.producer_id = 12;
  a.producer_epoch = 3;
  a.topics = {{"orders", {0, 5}, {}}};
  M::TransactionState b;
  b.error_code = 105;  // TRANSACTIONAL_ID_NOT_FOUND
  b.transactional_id = "txn-b";
  b.unknown_tagged_fields = extra_tag(4);
  m.transaction_states = {a, b};
  return m;
}

ListTransactionsRequest list_transactions_request(std::int16_t v) {
  ListTransactionsRequest m;
  m.state_filters = {"Ongoing", "PrepareCommit"};
  m.producer_id_filters = {12, 1LL << 33};
  if (v >= 1) m.duration_filter = 30000;
  if (v >= 2) m.transactional_id_pattern = std::string("txn-.*");
  return m;
}

ListTransactionsResponse list_transactions_response(std::int16_t) {
  ListTransactionsResponse m;
  m.error_code = 0;
  m.unknown_state_filters = {"Bogus"};
  m.transaction_states = {{"txn-a", 12, "Ongoing", {}}, {"txn-c", 40, "CompleteAbort", extra_tag(1)}};
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

TEST(TransactionMessages, DeclaredVersionRanges) {
  // Kafka 4.1 accepts these ranges (3.9: EndTxn and TxnOffsetCommit up to 4,
  // ListTransactions up to 1).
  EXPECT_EQ(static_cast<int>(InitProducerIdRequest::api_key), 22);
  EXPECT_EQ(InitProducerIdRequest::max_version, 5);
  EXPECT_EQ(InitProducerIdRequest::flexible_since, 2);
  EXPECT_EQ(static_cast<int>(AddPartitionsToTxnRequest::api_key), 24);
  EXPECT_EQ(AddPartitionsToTxnRequest::max_version, 5);
  EXPECT_EQ(AddPartitionsToTxnRequest::kClientMaxVersion, 3);
  EXPECT_EQ(static_cast<int>(AddOffsetsToTxnRequest::api_key), 25);
  EXPECT_EQ(AddOffsetsToTxnRequest::max_version, 4);
  EXPECT_EQ(static_cast<int>(EndTxnRequest::api_key), 26);
  EXPECT_EQ(EndTxnRequest::max_version, 5);
  EXPECT_EQ(static_cast<int>(TxnOffsetCommitRequest::api_key), 28);
  EXPECT_EQ(TxnOffsetCommitRequest::max_version, 6);
  EXPECT_EQ(TxnOffsetCommitRequest::default_max_version, 5);  // v6 needs topic ids
  EXPECT_EQ(static_cast<int>(DescribeProducersRequest::api_key), 61);
  EXPECT_EQ(static_cast<int>(DescribeTransactionsRequest::api_key), 65);
  EXPECT_EQ(static_cast<int>(ListTransactionsRequest::api_key), 66);
  EXPECT_EQ(ListTransactionsRequest::max_version, 2);
  EXPECT_EQ(DescribeTransactionsResponse::flexible_since, 0);
  EXPECT_EQ(api_name(ApiKey::init_producer_id), "InitProducerId");
  EXPECT_EQ(api_name(ApiKey::list_transactions), "ListTransactions");
}

TEST(TransactionMessages, RoundTripEveryVersion) {
  EXPECT_EQ(every_version<InitProducerIdRequest>(init_request, request_round_trip<InitProducerIdRequest>), 6);
  EXPECT_EQ(every_version<InitProducerIdResponse>(init_response, response_round_trip<InitProducerIdResponse>), 6);
  EXPECT_EQ(
      every_version<AddPartitionsToTxnRequest>(add_partitions_request, request_round_trip<AddPartitionsToTxnRequest>),
      6);
  EXPECT_EQ(every_version<AddPartitionsToTxnResponse>(add_partitions_response,
                                                      response_round_trip<AddPartitionsToTxnResponse>),
            6);
  EXPECT_EQ(every_version<AddOffsetsToTxnRequest>(add_offsets_request, request_round_trip<AddOffsetsToTxnRequest>), 5);
  EXPECT_EQ(every_version<AddOffsetsToTxnResponse>(add_offsets_response, response_round_trip<AddOffsetsToTxnResponse>),
            5);
  EXPECT_EQ(every_version<EndTxnRequest>(end_txn_request, request_round_trip<EndTxnRequest>), 6);
  EXPECT_EQ(every_version<EndTxnResponse>(end_txn_response, response_round_trip<EndTxnResponse>), 6);
  EXPECT_EQ(
      every_version<TxnOffsetCommitRequest>(txn_offset_commit_request, request_round_trip<TxnOffsetCommitRequest>), 7);
  EXPECT_EQ(
      every_version<TxnOffsetCommitResponse>(txn_offset_commit_response, response_round_trip<TxnOffsetCommitResponse>),
      7);
  EXPECT_EQ(
      every_version<DescribeProducersRequest>(describe_producers_request, request_round_trip<DescribeProducersRequest>),
      1);
  EXPECT_EQ(every_version<DescribeProducersResponse>(describe_producers_response,
                                                     response_round_trip<DescribeProducersResponse>),
            1);
  EXPECT_EQ(every_version<DescribeTransactionsRequest>(describe_transactions_request,
                                                       request_round_trip<DescribeTransactionsRequest>),
            1);
  EXPECT_EQ(every_version<DescribeTransactionsResponse>(describe_transactions_response,
                                                        response_round_trip<DescribeTransactionsResponse>),
            1);
  EXPECT_EQ(
      every_version<ListTransactionsRequest>(list_transactions_request, request_round_trip<ListTransactionsRequest>),
      3);
  EXPECT_EQ(every_version<ListTransactionsResponse>(list_transactions_response,
                                                    response_round_trip<ListTransactionsResponse>),
            3);
}

// v6 (Kafka 4.4) carries the topic's 16-byte id where v5 carried its name:
// the compact string "orders" (1 + 6 bytes) is replaced by the id.
TEST(TransactionMessages, TxnOffsetCommitV6NamesTheTopicById) {
  auto v5 = txn_offset_commit_request(5);
  auto v6 = txn_offset_commit_request(6);
  v6.unknown_tagged_fields = v5.unknown_tagged_fields;
  const Bytes b5 = encode(v5, 5);
  const Bytes b6 = encode(v6, 6);
  EXPECT_EQ(b6.size(), b5.size() - 7 + 16);
  const auto id = orders_id();
  EXPECT_NE(std::search(b6.begin(), b6.end(), id.bytes.begin(), id.bytes.end()), b6.end());
  const std::string name = "orders";
  EXPECT_EQ(std::search(b6.begin(), b6.end(), name.begin(), name.end()), b6.end());
  EXPECT_NE(std::search(b5.begin(), b5.end(), name.begin(), name.end()), b5.end());
}

TEST(TransactionMessages, InitProducerIdV0AndV3Bytes) {
  InitProducerIdRequest m;
  m.transactional_id = std::nullopt;  // idempotent producer
  m.transaction_timeout_ms = 1000;
  EXPECT_EQ(encode(m, 0), bytes_of({
                              0xff, 0xff,        // transactional id: null
                              0, 0, 0x03, 0xe8,  // timeout
                          }));
  m.transactional_id = std::string("t");
  m.producer_id = 5;
  m.producer_epoch = 2;
  EXPECT_EQ(encode(m, 3), bytes_of({
                              2, 't',                  // compact nullable string
                              0, 0, 0x03, 0xe8,        // timeout
                              0, 0, 0, 0, 0, 0, 0, 5,  // producer id (v3+)
                              0, 2,                    // producer epoch (v3+)
                              0,                       // tag block
                          }));
}

TEST(TransactionMessages, AddPartitionsToTxnClientAndBrokerShapes) {
  // v3 (the last client version): one transaction's fields at the top level.
  AddPartitionsToTxnRequest m;
  m.v3_and_below_transactional_id = "t";
  m.v3_and_below_producer_id = 1;
  m.v3_and_below_producer_epoch = 0;
  m.v3_and_below_topics = {{"x", {2}, {}}};
  EXPECT_EQ(encode(m, 3), bytes_of({
                              2, 't',                      // transactional id
                              0, 0,   0,   0, 0, 0, 0, 1,  // producer id
                              0, 0,                        // epoch
                              2, 2,   'x',                 // one topic "x"
                              2, 0,   0,   0, 2,           // partitions [2]
                              0,                           // topic tags
                              0,                           // tags
                          }));
  // v4: the same transaction inside the Transactions array, the v3 fields gone.
  AddPartitionsToTxnRequest n;
  n.transactions = {{"t", 1, 0, false, {{"x", {2}, {}}}, {}}};
  EXPECT_EQ(encode(n, 4), bytes_of({
                              2,  // one transaction
                              2, 't', 0,   0, 0, 0, 0, 0, 0, 1, 0, 0,
                              0,  // verify only: false
                              2, 2,   'x', 2, 0, 0, 0, 2, 0,
                              0,  // transaction tags
                              0,  // tags
                          }));
}

TEST(TransactionMessages, EndTxnV5AnswersTheNextEpoch) {
  // A Kafka 4 coordinator's EndTxn v5 answer: error 0, producer 12 epoch 4.
  Bytes body = bytes_of({
      0, 0, 0, 0,               // throttle
      0, 0,                     // error
      0, 0, 0, 0, 0, 0, 0, 12,  // producer id
      0, 4,                     // producer epoch
      0,                        // tags
  });
  Reader r{ByteSpan(body)};
  EndTxnResponse m;
  decode(r, m, 5);
  ASSERT_TRUE(r.ok()) << r.error();
  EXPECT_TRUE(r.empty());
  EXPECT_EQ(m.producer_id, 12);
  EXPECT_EQ(m.producer_epoch, 4);
  // v4 has neither field: the same prefix leaves them at -1.
  Reader r4{ByteSpan(body).first(7)};
  EndTxnResponse m4;
  decode(r4, m4, 4);
  ASSERT_TRUE(r4.ok());
  EXPECT_EQ(m4.producer_id, -1);
  EXPECT_EQ(m4.producer_epoch, -1);
}

TEST(TransactionMessages, TruncatedBodiesFailCleanly) {
  for (std::int16_t v = 0; v <= TxnOffsetCommitRequest::max_version; ++v) {
    Bytes full = encode(txn_offset_commit_request(v), v);
    for (std::size_t cut = 0; cut < full.size(); ++cut) {
      Reader r{ByteSpan(full).first(cut)};
      TxnOffsetCommitRequest m;
      decode(r, m, v);
      EXPECT_FALSE(r.ok() && r.empty()) << "v" << v << " cut at " << cut;
    }
  }
}
