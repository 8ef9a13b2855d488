// The producer's broker errors on the mock cluster: NOT_ENOUGH_REPLICAS and
// NOT_ENOUGH_REPLICAS_AFTER_APPEND (acks=all with the ISR below
// min.insync.replicas) are retried, then raised as NotEnoughReplicasError
// naming the partition; a later send succeeds once the replicas are back.
// A refusal naming the new leader (KIP-951) is followed without Metadata.
#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "kwire/client/producer.hpp"
#include "kwire/mock/mock_cluster.hpp"
#include "kwire/protocol/messages/produce.hpp"
#include "mock_consumer_support.hpp"

using namespace kwire::client;
using kwire::mock::MockCluster;
using kwire::mock_support::props;
using kwire::protocol::ApiKey;
using kwire::protocol::ErrorCode;

namespace {

void send_values(Producer& p, const std::string& topic, std::int32_t partition, int n) {
  for (int i = 0; i < n; ++i) {
    ProducerMessage m;
    m.topic = topic;
    m.partition = partition;
    const std::string v = "m" + std::to_string(i);
    m.value = kwire::protocol::Bytes(v.begin(), v.end());
    p.send(std::move(m));
  }
}

}  // namespace

TEST(MockProducerErrors, NotEnoughReplicasIsRetriedThenRaisedTypedNamingThePartition) {
  MockCluster c(1);
  c.create_topic("p", 2);
  // retries=2: three attempts, all refused.
  c.fail_next(ApiKey::produce, "p", 1, ErrorCode::not_enough_replicas, 3);
  Producer prod(props(c, {{"retries", "2"}, {"acks", "all"}}));
  send_values(prod, "p", 1, 3);
  try {
    prod.flush();
    FAIL() << "flush succeeded";
  } catch (const NotEnoughReplicasError& e) {
    EXPECT_EQ(e.code(), static_cast<std::int16_t>(ErrorCode::not_enough_replicas));
    EXPECT_EQ(e.partition(), (TopicPartition{"p", 1}));
    EXPECT_TRUE(e.retriable());
    const std::string what = e.what();
    EXPECT_NE(what.find("p-1"), std::string::npos) << what;
    EXPECT_NE(what.find("NOT_ENOUGH_REPLICAS"), std::string::npos) << what;
    EXPECT_NE(what.find("after 3 attempts"), std::string::npos) << what;
  }
  EXPECT_EQ(c.requests(ApiKey::produce).size(), 3u);
  EXPECT_EQ(c.high_watermark("p", 1), 0);
  EXPECT_EQ(prod.records_sent(), 0u);
  // The replicas are back: the next send goes through.
  send_values(prod, "p", 1, 2);
  prod.flush();
  EXPECT_EQ(prod.records_sent(), 2u);
  EXPECT_EQ(c.high_watermark("p", 1), 2);
}

TEST(MockProducerErrors, ARecordLargerThanMaxRequestSizeIsRefusedTypedAndTheNextOneGoes) {
  MockCluster c(1);
  c.create_topic("p", 1);
  Producer prod(props(c, {{"max.request.size", "1000"}}));
  ProducerMessage big;
  big.topic = "p";
  big.partition = 0;
  big.value = kwire::protocol::Bytes(2000, 'x');
  try {
    prod.send(std::move(big));
    FAIL() << "send accepted a 2000-byte record";
  } catch (const RecordTooLargeError& e) {
    EXPECT_EQ(e.code(), static_cast<std::int16_t>(ErrorCode::message_too_large));
    EXPECT_EQ(e.partition(), (TopicPartition{"p", 0}));
    EXPECT_FALSE(e.retriable());
    EXPECT_NE(std::string(e.what()).find("max.request.size (1000 bytes)"), std::string::npos) << e.what();
  }
  send_values(prod, "p", 0, 2);
  prod.flush();
  EXPECT_EQ(c.high_watermark("p", 0), 2);
}

TEST(MockProducerErrors, DeliveryTimeoutBelowLingerPlusRequestTimeoutIsAConfigError) {
  MockCluster c(1);
  try {
    Producer prod(props(c, {{"delivery.timeout.ms", "1000"}, {"linger.ms", "10"}, {"request.timeout.ms", "2000"}}));
    FAIL() << "accepted delivery.timeout.ms 1000 < 10 + 2000";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("delivery.timeout.ms (1000 ms) should be equal to or larger than linger.ms + "
                                         "request.timeout.ms (10 + 2000 ms)"),
              std::string::npos)
        << e.what();
  }
  // Equal is allowed; the default is raised to the sum instead of refused.
  EXPECT_NO_THROW(
      Producer(props(c, {{"delivery.timeout.ms", "2010"}, {"linger.ms", "10"}, {"request.timeout.ms", "2000"}})));
  EXPECT_NO_THROW(Producer(props(c, {{"request.timeout.ms", "200000"}})));
}

TEST(MockProducerErrors, NotEnoughReplicasAfterAppendIsTypedToo) {
  MockCluster c(1);
  c.create_topic("p", 1);
  c.fail_next(ApiKey::produce, "p", 0, ErrorCode::not_enough_replicas_after_append, 1);
  Producer prod(props(c, {{"retries", "0"}}));
  send_values(prod, "p", 0, 1);
  try {
    prod.flush();
    FAIL() << "flush succeeded";
  } catch (const NotEnoughReplicasError& e) {
    EXPECT_EQ(e.code(), static_cast<std::int16_t>(ErrorCode::not_enough_replicas_after_append));
    EXPECT_EQ(e.partition(), (TopicPartition{"p", 0}));
  }
}

TEST(MockProducerErrors, ARetriedNotEnoughReplicasThatClearsSucceeds) {
  MockCluster c(1);
  c.create_topic("p", 1);
  c.fail_next(ApiKey::produce, "p", 0, ErrorCode::not_enough_replicas, 2);
  Producer prod(props(c, {{"retries", "3"}}));
  send_values(prod, "p", 0, 4);
  prod.flush();
  EXPECT_EQ(prod.records_sent(), 4u);
  EXPECT_EQ(c.high_watermark("p", 0), 4);
  EXPECT_EQ(c.requests(ApiKey::produce).size(), 3u);
}

TEST(MockProducerErrors, ANonRetriableErrorIsAProduceErrorNamingThePartition) {
  MockCluster c(1);
  c.create_topic("p", 1);
  c.fail_next(ApiKey::produce, "p", 0, ErrorCode::record_list_too_large, 1);
  Producer prod(props(c));
  send_values(prod, "p", 0, 1);
  try {
    prod.flush();
    FAIL() << "flush succeeded";
  } catch (const NotEnoughReplicasError&) {
    FAIL() << "not a replica error";
  } catch (const ProduceError& e) {
    EXPECT_FALSE(e.retriable());
    EXPECT_EQ(e.partition(), (TopicPartition{"p", 0}));
    EXPECT_EQ(c.requests(ApiKey::produce).size(), 1u);
  }
}

// KIP-951: after a leader move the old leader refuses the next Produce with
// NOT_LEADER_OR_FOLLOWER and names the new leader (v10+); the producer sends
// there next with no Metadata request in between. Before v10 it refreshes
// metadata first. Every record is written once either way.
class MockProducerLeaderMove : public ::testing::TestWithParam<std::int16_t> {};

TEST_P(MockProducerLeaderMove, FollowsTheLeaderTheRefusalNames) {
  const std::int16_t produce_version = GetParam();
  MockCluster c(2);
  c.set_max_version(ApiKey::produce, produce_version);
  c.create_topic("p", 1, {1});
  Producer prod(props(c, {{"linger.ms", "0"}}));
  send_values(prod, "p", 0, 2);
  prod.flush();
  c.move_leader("p", 0, 2);
  c.clear_requests();
  send_values(prod, "p", 0, 3);
  prod.flush();
  EXPECT_EQ(c.high_watermark("p", 0), 5);
  const auto reqs = c.requests();
  std::vector<std::int32_t> produce_brokers;
  bool metadata_between = false;
  for (auto& r : reqs) {
    const bool to_new_leader_yet =
        std::find(produce_brokers.begin(), produce_brokers.end(), 2) != produce_brokers.end();
    if (r.api_key == ApiKey::produce) produce_brokers.push_back(r.broker);
    // A Metadata request after the first refusal and before the first
    // Produce to the new leader.
    if (r.api_key == ApiKey::metadata && !produce_brokers.empty() && !to_new_leader_yet) metadata_between = true;
  }
  ASSERT_GE(produce_brokers.size(), 2u) << kwire::mock_support::dump(reqs);
  EXPECT_EQ(produce_brokers.front(), 1) << kwire::mock_support::dump(reqs);
  EXPECT_EQ(produce_brokers.back(), 2) << kwire::mock_support::dump(reqs);
  EXPECT_EQ(metadata_between, produce_version < 10) << kwire::mock_support::dump(reqs);
}

INSTANTIATE_TEST_SUITE_P(ProduceVersions, MockProducerLeaderMove,
                         ::testing::Values(std::int16_t{9}, kwire::protocol::ProduceRequest::max_version),
                         [](const auto& info) { return "v" + std::to_string(info.param); });
