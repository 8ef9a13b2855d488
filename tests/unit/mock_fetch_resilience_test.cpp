// The consumer through leader moves on the mock cluster: metadata answers
// older than what the client knows, and a topic deleted and created again
// under a running fetch session (KIP-227 sessions keyed by topic id, KIP-516).
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "kwire/client/consumer.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/mock/mock_cluster.hpp"
#include "kwire/protocol/messages.hpp"
#include "mock_consumer_support.hpp"

using namespace std::chrono_literals;
using kwire::client::Consumer;
using kwire::client::OffsetOutOfRangeError;
using kwire::client::TopicPartition;
using kwire::mock::Fault;
using kwire::mock::MockCluster;
using kwire::mock::RequestRecord;
using kwire::protocol::ApiKey;
using kwire::protocol::ErrorCode;
using namespace kwire::mock_support;

namespace {

const TopicPartition t0{"t", 0};

Fault stale_metadata(int times) {
  Fault f;
  f.api = ApiKey::metadata;
  f.topic = "t";
  f.partition = 0;
  f.times = times;
  f.stale_metadata = true;
  return f;
}

}  // namespace

// After a leader move the client knows epoch 1 on broker 2. Brokers that
// still answer Metadata with epoch 0 on broker 1 do not take it back there:
// the cache keeps the newer leader, and every later Fetch goes to broker 2
// with epoch 1 (Java's Metadata.updateLatestMetadata).
TEST(MockFetchResilience, MetadataWithAnOlderLeaderEpochKeepsTheNewerLeader) {
  MockCluster c(2);
  c.create_topic("t", 1, {1});
  c.append_values("t", 0, 3);
  Consumer cons(props(c, {{"auto.offset.reset", "earliest"}, {"retries", "2"}}));
  cons.assign({t0});
  ASSERT_EQ(poll_until(cons, 3).size(), 3u);
  c.move_leader("t", 0, 2);
  c.append_values("t", 0, 3);
  ASSERT_EQ(poll_until(cons, 3), expected("t-0", 3, 6));
  ASSERT_EQ(c.leader_epoch("t", 0), 1);

  c.inject(stale_metadata(10));
  for (int i = 0; i < 5; ++i) {
    auto md = cons.client().metadata(std::vector<std::string>{"t"});
    ASSERT_NE(md.topic("t"), nullptr);
    EXPECT_EQ(md.topic("t")->partitions.at(0).leader_id, 2);
    EXPECT_EQ(md.topic("t")->partitions.at(0).leader_epoch, 1);
  }
  EXPECT_LE(c.pending_faults(), 5u);  // the stale answers were really given
  const auto* cached = cons.client().cached_metadata().topic("t");
  ASSERT_NE(cached, nullptr);
  EXPECT_EQ(cached->partitions.at(0).leader_epoch, 1);

  // Fetch requests from here on were sent after the stale answers (one may
  // already be waiting on the broker; the second read needs at least one more).
  const auto before = c.requests(ApiKey::fetch).size();
  c.append_values("t", 0, 4);
  EXPECT_EQ(poll_until(cons, 4), expected("t-0", 6, 10));
  c.append_values("t", 0, 2);
  EXPECT_EQ(poll_until(cons, 2), expected("t-0", 10, 12));
  auto all = c.requests(ApiKey::fetch);
  ASSERT_GT(all.size(), before);
  const std::vector<RequestRecord> fetches(all.begin() + static_cast<std::ptrdiff_t>(before), all.end());
  for (auto& r : fetches) {
    EXPECT_EQ(r.broker, 2) << describe(r);
    ASSERT_FALSE(r.current_leader_epochs.empty());
    EXPECT_EQ(r.current_leader_epochs.front(), 1) << describe(r);
  }
  c.clear_faults();
}

// A leader move while every broker still answers Metadata with the old
// leader for longer than `retries` allows (brokers before KIP-951): the consumer keeps being refused
// by the old leader (NOT_LEADER_OR_FOLLOWER), refreshes, backs off, and once
// metadata names the new leader reads every record once, from where it was.
TEST(MockFetchResilience, LeaderMoveWithMetadataLaggingLongerThanRetriesLosesNothing) {
  MockCluster c(2);
  // Fetch v11: the refusals do not name the new leader (KIP-951), so only
  // metadata can.
  c.set_max_version(ApiKey::fetch, 11);
  c.create_topic("t", 1, {1});
  c.append_values("t", 0, 3);
  Consumer cons(props(c, {{"auto.offset.reset", "earliest"}, {"retries", "2"}, {"retry.backoff.max.ms", "40"}}));
  cons.assign({t0});
  ASSERT_EQ(poll_until(cons, 3).size(), 3u);
  c.inject(stale_metadata(12));
  c.move_leader("t", 0, 2);
  c.append_values("t", 0, 5);
  c.clear_requests();
  auto got = poll_until(cons, 5, 5000ms);  // throws on any error
  auto more = poll_until(cons, 1, 300ms);  // nothing repeated
  got.insert(got.end(), more.begin(), more.end());
  EXPECT_EQ(got, expected("t-0", 3, 8));
  EXPECT_EQ(c.pending_faults(), 0u);
  auto fetches = c.requests(ApiKey::fetch);
  int refused = 0;
  for (auto& r : fetches) {
    if (r.broker == 1) ++refused;
    for (auto& p : r.partitions) {
      if (r.broker == 1) {
        EXPECT_EQ(p.offset, 3) << describe(r);
      }
    }
  }
  EXPECT_GE(refused, 10) << dump(fetches);
  c.clear_faults();
}

// A topic deleted and created again while a fetch session (v13, topic ids)
// lists it: the client learns the new id from metadata, forgets the
// partition under the old id and lists it under the new one in the same
// session; its position (5) is past the new log's end, so auto.offset.reset
// applies and the new records are read.
TEST(MockFetchResilience, RecreatedTopicIsFollowedByIdInsideTheFetchSession) {
  MockCluster c;
  c.enable_fetch_sessions(true);
  auto old_id = c.create_topic("t", 1);
  c.append_values("t", 0, 5);
  Consumer cons(props(c, {{"auto.offset.reset", "earliest"}, {"retries", "2"}}));
  cons.assign({t0});
  ASSERT_EQ(poll_until(cons, 5).size(), 5u);
  auto new_id = c.recreate_topic("t", 1);
  ASSERT_NE(old_id, new_id);
  c.append_values("t", 0, 2, 1, "n");
  c.clear_requests();
  EXPECT_EQ(poll_until(cons, 2, 5000ms), expected("t-0", 0, 2, "n"));
  EXPECT_EQ(c.fetch_sessions_opened(1), 1);  // the one session throughout
  auto fetches = c.requests(ApiKey::fetch);
  bool listed_new = false;
  for (auto& r : fetches)
    for (auto& id : r.topic_ids) listed_new = listed_new || id == new_id;
  EXPECT_TRUE(listed_new) << dump(fetches);
  EXPECT_LT(fetches.size(), 30u) << dump(fetches);
}

TEST(MockFetchResilience, RecreatedTopicInsideTheFetchSessionWithResetNoneIsOutOfRange) {
  MockCluster c;
  c.enable_fetch_sessions(true);
  c.create_topic("t", 1);
  c.append_values("t", 0, 5);
  Consumer cons(props(c, {{"auto.offset.reset", "none"}, {"retries", "2"}}));
  cons.assign({t0});
  cons.seek(t0, 0);
  ASSERT_EQ(poll_until(cons, 5).size(), 5u);
  c.recreate_topic("t", 1);
  c.append_values("t", 0, 2);
  try {
    poll_until(cons, 1, 3000ms);
    FAIL() << "expected OffsetOutOfRangeError";
  } catch (const OffsetOutOfRangeError& e) {
    EXPECT_NE(std::string(e.what()).find("t-0"), std::string::npos) << e.what();
  }
}
