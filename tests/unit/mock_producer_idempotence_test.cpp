// The idempotent producer on the mock cluster, against a broker's sequence
// checks (MockTransactions): on by default; batches numbered per partition
// from 0; a resent batch written once (a lost answer, an append followed by
// NOT_ENOUGH_REPLICAS_AFTER_APPEND); five requests in flight with a failure
// in the middle keep their order with no gap and no duplicate; a leader
// change keeps the sequence; batches that expire before they reach a broker
// leave no gap; OUT_OF_ORDER_SEQUENCE_NUMBER and UNKNOWN_PRODUCER_ID bump the
// epoch (KIP-360); a cluster denying IDEMPOTENT_WRITE gives
// IdempotenceDeniedError; Java's rules for turning idempotence off.
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <vector>

#include "kwire/client/consumer.hpp"
#include "kwire/client/producer.hpp"
#include "kwire/mock/mock_cluster.hpp"
#include "kwire/mock/mock_transactions.hpp"
#include "mock_consumer_support.hpp"

using namespace kwire::client;
using namespace std::chrono_literals;
using kwire::mock::MockCluster;
using kwire::mock::MockTransactions;
using kwire::mock_support::Got;
using kwire::mock_support::poll_until;
using kwire::mock_support::props;
using kwire::protocol::ApiKey;
using kwire::protocol::ErrorCode;

namespace {

ProducerMessage message(const std::string& topic, std::int32_t partition, const std::string& value) {
  ProducerMessage m;
  m.topic = topic;
  m.partition = partition;
  m.value = kwire::protocol::Bytes(value.begin(), value.end());
  return m;
}

// Every value of the partition, in offset order.
std::vector<std::string> log_values(MockCluster& c, const std::string& topic, std::int32_t partition) {
  Consumer cons(props(c));
  TopicPartition tp{topic, partition};
  cons.assign({tp});
  cons.seek(tp, 0);
  auto got = poll_until(cons, static_cast<std::size_t>(c.high_watermark(topic, partition)));
  std::vector<std::string> out;
  for (auto& g : got) out.push_back(g.value);
  return out;
}

std::vector<std::string> numbered(int from, int until, const std::string& prefix = "m") {
  std::vector<std::string> out;
  for (int i = from; i < until; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// The sequences written are contiguous per epoch, starting at 0.
void expect_no_gap(const std::vector<MockTransactions::Written>& w) {
  std::int16_t epoch = -2;
  std::int32_t next = 0;
  for (auto& b : w) {
    if (b.producer_epoch != epoch) {
      epoch = b.producer_epoch;
      next = 0;
    }
    EXPECT_EQ(b.first_sequence, next) << "epoch " << b.producer_epoch;
    next = b.last_sequence + 1;
  }
}

}  // namespace

TEST(MockIdempotence, OnByDefaultWithOneProducerIdAndSequencesFromZero) {
  MockCluster c(1);
  c.create_topic("t", 2);
  MockTransactions txn(c);
  Producer p(props(c, {{"linger.ms", "0"}}));
  EXPECT_TRUE(p.idempotent());
  for (int i = 0; i < 3; ++i) p.send(message("t", 0, "m" + std::to_string(i)));
  p.flush();
  for (int i = 3; i < 5; ++i) p.send(message("t", 0, "m" + std::to_string(i)));
  p.send(message("t", 1, "x"));
  p.flush();
  EXPECT_EQ(c.requests(ApiKey::init_producer_id).size(), 1u);
  for (auto& r : c.requests(ApiKey::produce)) EXPECT_GE(r.version, 3);
  auto w0 = txn.written("t", 0);
  ASSERT_GE(w0.size(), 2u);
  EXPECT_GE(w0[0].producer_id, 0);
  EXPECT_EQ(w0[0].producer_epoch, 0);
  EXPECT_EQ(w0[0].first_sequence, 0);
  expect_no_gap(w0);
  EXPECT_EQ(w0.back().last_sequence, 4);
  auto w1 = txn.written("t", 1);
  ASSERT_EQ(w1.size(), 1u);
  EXPECT_EQ(w1[0].first_sequence, 0);  // each partition numbers from 0
  EXPECT_EQ(w1[0].producer_id, w0[0].producer_id);
  EXPECT_EQ(log_values(c, "t", 0), numbered(0, 5));
}

TEST(MockIdempotence, AnAnswerLostAfterTheWriteIsResentAndWrittenOnce) {
  MockCluster c(1);
  c.create_topic("t", 1);
  MockTransactions txn(c);
  Producer p(props(c, {{"linger.ms", "0"}}));
  p.send(message("t", 0, "m0"));
  p.flush();
  // The broker writes the batch, then the connection drops before the answer.
  kwire::mock::Fault f;
  f.api = ApiKey::produce;
  f.drop_connection = true;
  c.inject(f);
  std::atomic<std::int64_t> offset{-2};
  p.send(message("t", 0, "m1"), [&](const RecordMetadata& md, std::exception_ptr e) { offset = e ? -3 : md.offset; });
  p.flush();
  EXPECT_EQ(txn.duplicates(), 1);
  EXPECT_EQ(offset.load(), 1);  // the offset it was first written at
  EXPECT_EQ(c.high_watermark("t", 0), 2);
  EXPECT_EQ(log_values(c, "t", 0), numbered(0, 2));
  EXPECT_GE(p.stats().retries, 1u);
}

TEST(MockIdempotence, NotEnoughReplicasAfterAppendIsRetriedWithoutADuplicate) {
  MockCluster c(1);
  c.create_topic("t", 1);
  MockTransactions txn(c);
  kwire::mock::Fault f;
  f.api = ApiKey::produce;
  f.topic = "t";
  f.partition = 0;
  f.error_code = static_cast<std::int16_t>(ErrorCode::not_enough_replicas_after_append);
  f.append_anyway = true;
  f.times = 2;
  c.inject(f);
  Producer p(props(c, {{"linger.ms", "0"}}));
  for (int i = 0; i < 4; ++i) p.send(message("t", 0, "m" + std::to_string(i)));
  p.flush();
  EXPECT_EQ(c.high_watermark("t", 0), 4);
  EXPECT_EQ(log_values(c, "t", 0), numbered(0, 4));
  EXPECT_EQ(txn.duplicates(), 2);
}

TEST(MockIdempotence, FiveInFlightWithAFailureInTheMiddleKeepOrderWithoutGapOrDuplicate) {
  MockCluster c(1);
  c.create_topic("t", 1);
  MockTransactions txn(c);
  // One record per batch (batch.size below two records), five requests in flight.
  Producer p(props(c, {{"linger.ms", "0"}, {"batch.size", "75"}, {"max.in.flight.requests.per.connection", "5"}}));
  p.send(message("t", 0, "m0"));
  p.flush();
  // Hold the answers back until all five requests are out, then fail the third.
  kwire::mock::Fault slow;
  slow.api = ApiKey::produce;
  slow.delay = 150ms;
  c.inject(slow);
  txn.fail_produce("t", 0, ErrorCode::none, 2);  // the first two of the five go through
  txn.fail_produce("t", 0, ErrorCode::not_leader_or_follower, 1);
  std::vector<std::string> sent{"m0"};
  for (int i = 1; i <= 5; ++i) {
    p.send(message("t", 0, "m" + std::to_string(i)));
    sent.push_back("m" + std::to_string(i));
  }
  p.flush();
  EXPECT_EQ(p.stats().max_in_flight, 5u);
  EXPECT_GE(txn.out_of_order(), 1);  // the batches after the failed one were refused, then resent
  EXPECT_EQ(txn.duplicates(), 0);
  auto w = txn.written("t", 0);
  expect_no_gap(w);
  EXPECT_EQ(w.size(), 6u);
  EXPECT_EQ(log_values(c, "t", 0), sent);
}

TEST(MockIdempotence, ALeaderChangeKeepsTheSequence) {
  MockCluster c(2);
  c.create_topic("t", 1, {1});
  MockTransactions txn(c);
  Producer p(props(c, {{"linger.ms", "0"}}));
  for (int i = 0; i < 3; ++i) p.send(message("t", 0, "m" + std::to_string(i)));
  p.flush();
  c.move_leader("t", 0, 2);
  for (int i = 3; i < 6; ++i) p.send(message("t", 0, "m" + std::to_string(i)));
  p.flush();
  auto w = txn.written("t", 0);
  expect_no_gap(w);
  EXPECT_EQ(w.back().last_sequence, 5);
  EXPECT_EQ(w.back().producer_epoch, 0);
  EXPECT_EQ(log_values(c, "t", 0), numbered(0, 6));
  bool to_new_leader = false;
  for (auto& r : c.requests(ApiKey::produce)) to_new_leader = to_new_leader || r.broker == 2;
  EXPECT_TRUE(to_new_leader);
}

TEST(MockIdempotence, BatchesThatExpireBeforeReachingABrokerLeaveNoGap) {
  MockCluster c(2);
  c.create_topic("t", 1, {1});
  MockTransactions txn(c);
  Producer p(props(c, {{"linger.ms", "0"}, {"delivery.timeout.ms", "500"}, {"request.timeout.ms", "300"}}));
  for (int i = 0; i < 2; ++i) p.send(message("t", 0, "m" + std::to_string(i)));
  p.flush();
  // The partition moves to a broker that cannot be reached: the old leader
  // refuses what was sent to it (NOT_LEADER_OR_FOLLOWER), the new one is
  // never reached, and every batch expires.
  c.set_broker_down(2, true);
  c.move_leader("t", 0, 2);
  std::vector<std::exception_ptr> errors;
  std::mutex mu;
  for (int i = 0; i < 3; ++i)
    p.send(message("t", 0, "lost" + std::to_string(i)), [&](const RecordMetadata&, std::exception_ptr e) {
      std::lock_guard lock(mu);
      errors.push_back(e);
    });
  p.flush();
  ASSERT_EQ(errors.size(), 3u);
  for (auto& e : errors) {
    try {
      std::rethrow_exception(e);
    } catch (const DeliveryTimeoutError& d) {
      EXPECT_NE(std::string(d.what()).find("delivery.timeout.ms"), std::string::npos) << d.what();
      EXPECT_EQ(d.partition(), (TopicPartition{"t", 0}));
    } catch (const std::exception& x) {
      ADD_FAILURE() << "not a DeliveryTimeoutError: " << x.what();
    }
  }
  c.set_broker_down(2, false);
  p.send(message("t", 0, "m2"));
  p.flush();
  EXPECT_EQ(txn.out_of_order(), 0);  // the next batch followed the last written one
  EXPECT_EQ(p.stats().epoch_bumps, 0u);
  auto w = txn.written("t", 0);
  expect_no_gap(w);
  EXPECT_EQ(w.back().first_sequence, 2);
  EXPECT_EQ(log_values(c, "t", 0), numbered(0, 3));
}

TEST(MockIdempotence, OutOfOrderOnTheNextSequenceBumpsTheEpochAndStartsOver) {
  MockCluster c(1);
  c.create_topic("t", 1);
  MockTransactions txn(c);
  Producer p(props(c, {{"linger.ms", "0"}}));
  p.send(message("t", 0, "m0"));
  p.flush();
  // The broker lost track (as after an unclean election): the next batch is refused.
  txn.fail_produce("t", 0, ErrorCode::out_of_order_sequence_number);
  p.send(message("t", 0, "m1"));
  p.flush();
  EXPECT_EQ(p.stats().epoch_bumps, 1u);
  auto w = txn.written("t", 0);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[1].producer_id, w[0].producer_id);
  EXPECT_EQ(w[1].producer_epoch, 1);
  EXPECT_EQ(w[1].first_sequence, 0);
  EXPECT_EQ(log_values(c, "t", 0), numbered(0, 2));
}

TEST(MockIdempotence, UnknownProducerIdBumpsTheEpochAndRetries) {
  MockCluster c(1);
  c.create_topic("t", 1);
  MockTransactions txn(c);
  Producer p(props(c, {{"linger.ms", "0"}}));
  p.send(message("t", 0, "m0"));
  p.flush();
  txn.fail_produce("t", 0, ErrorCode::unknown_producer_id);
  txn.forget_producers("t", 0);
  p.send(message("t", 0, "m1"));
  p.flush();
  EXPECT_EQ(p.stats().epoch_bumps, 1u);
  auto w = txn.written("t", 0);
  ASSERT_EQ(w.size(), 2u);
  EXPECT_EQ(w[1].producer_epoch, 1);
  EXPECT_EQ(w[1].first_sequence, 0);
  EXPECT_EQ(log_values(c, "t", 0), numbered(0, 2));
}

TEST(MockIdempotence, DuplicateSequenceNumberIsASuccess) {
  MockCluster c(1);
  c.create_topic("t", 1);
  MockTransactions txn(c);
  txn.duplicates_as_error(true);
  Producer p(props(c, {{"linger.ms", "0"}}));
  p.send(message("t", 0, "m0"));
  p.flush();
  kwire::mock::Fault f;
  f.api = ApiKey::produce;
  f.drop_connection = true;
  c.inject(f);
  std::exception_ptr error;
  std::int64_t offset = -2;
  p.send(message("t", 0, "m1"), [&](const RecordMetadata& md, std::exception_ptr e) {
    error = e;
    offset = md.offset;
  });
  p.flush();
  EXPECT_FALSE(error);
  EXPECT_EQ(offset, -1);  // DUPLICATE_SEQUENCE_NUMBER carries no offset
  EXPECT_EQ(c.high_watermark("t", 0), 2);
}

TEST(MockIdempotence, ADeniedIdempotentWriteNamesTheWayOut) {
  MockCluster c(1);
  c.create_topic("t", 1);
  MockTransactions txn(c);
  txn.fail_next(ApiKey::init_producer_id, ErrorCode::cluster_authorization_failed);
  Producer p(props(c));
  std::exception_ptr error;
  p.send(message("t", 0, "m0"), [&](const RecordMetadata&, std::exception_ptr e) { error = e; });
  p.flush();
  ASSERT_TRUE(error);
  try {
    std::rethrow_exception(error);
  } catch (const IdempotenceDeniedError& e) {
    EXPECT_EQ(e.code(), static_cast<std::int16_t>(ErrorCode::cluster_authorization_failed));
    EXPECT_NE(std::string(e.what()).find("enable.idempotence=false"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("IDEMPOTENT_WRITE"), std::string::npos) << e.what();
  }
  // The producer is done for: later sends throw the same error.
  EXPECT_THROW(p.send(message("t", 0, "m1")), IdempotenceDeniedError);
  EXPECT_EQ(c.high_watermark("t", 0), 0);

  // Without idempotence no producer id is asked for.
  c.clear_requests();
  Producer plain(props(c, {{"enable.idempotence", "false"}}));
  EXPECT_FALSE(plain.idempotent());
  plain.send(message("t", 0, "m0"));
  plain.flush();
  EXPECT_TRUE(c.requests(ApiKey::init_producer_id).empty());
  EXPECT_EQ(txn.written("t", 0).at(0).producer_id, -1);
}

TEST(MockIdempotence, JavasRulesForTurningIdempotenceOff) {
  MockCluster c(1);
  c.create_topic("t", 1);
  // Not given: conflicting settings turn it off.
  EXPECT_FALSE(Producer(props(c, {{"acks", "1"}})).idempotent());
  EXPECT_FALSE(Producer(props(c, {{"retries", "0"}})).idempotent());
  EXPECT_FALSE(Producer(props(c, {{"max.in.flight.requests.per.connection", "6"}})).idempotent());
  EXPECT_TRUE(Producer(props(c, {{"acks", "all"}})).idempotent());
  // Given as true: the same settings are an error naming them.
  try {
    Producer p(props(c, {{"enable.idempotence", "true"}, {"acks", "1"}}));
    FAIL() << "no ConfigError";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("acks=1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(Producer(props(c, {{"transactional.id", "x"}, {"enable.idempotence", "false"}})), ConfigError);
  EXPECT_THROW(Producer(props(c, {{"transactional.id", "x"}, {"acks", "0"}})), ConfigError);
}
