// The producer's broker errors on the mock cluster: NOT_ENOUGH_REPLICAS and
// NOT_ENOUGH_REPLICAS_AFTER_APPEND (acks=all with the ISR below
// min.insync.replicas) are retried, then raised as NotEnoughReplicasError
// naming the partition; a later send succeeds once the replicas are back.
#include <gtest/gtest.h>

#include <string>

#include "kwire/client/producer.hpp"
#include "kwire/mock/mock_cluster.hpp"
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
