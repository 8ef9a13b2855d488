// A classic group member against a scripted coordinator on the mock cluster:
// how Consumer::subscribe() reacts to each group error (coordinator moves,
// rebalances, fencing), what it commits, and its rebalance listener calls.
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "../manual_clock.hpp"
#include "kwire/client/group_admin.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/protocol/messages.hpp"
#include "mock_classic_coordinator.hpp"
#include "mock_consumer_support.hpp"

using namespace kwire;
using namespace kwire::mock_support;
using namespace kwire::protocol;
using client::Consumer;
using client::TopicPartition;

TEST_F(MockGroup, JoinsWithTheMemberIdHandshakeAndStartsAtCommittedOffsets) {
  coord.committed[{"t", 0}] = 4;  // partition 1: none, so auto.offset.reset (earliest)
  Listener l;                     // outlives the consumer, whose destructor revokes
  Consumer c(group_props());
  c.subscribe({"t"}, &l);
  auto got = poll_until(c, 16);
  EXPECT_EQ(got.size(), 16u);
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got.front(), (Got{"t-0", 4, "v4"}));
  EXPECT_EQ(got[6], (Got{"t-1", 0, "v0"}));
  std::lock_guard lock(coord.mu);
  ASSERT_GE(coord.join_member_ids.size(), 2u);
  EXPECT_EQ(coord.join_member_ids[0], "");
  EXPECT_EQ(coord.join_member_ids[1], "member-1");  // KIP-394: rejoin with the id given
  EXPECT_EQ(l.calls, std::vector<std::string>{"assigned t-0,t-1"});
  EXPECT_EQ(c.group_metadata().member_id, "member-1");
  EXPECT_EQ(c.group_metadata().generation, 1);
}

TEST_F(MockGroup, CoordinatorMovesAndLoadsAreRetried) {
  fail_next(ApiKey::find_coordinator, {ErrorCode::coordinator_not_available, ErrorCode::coordinator_load_in_progress});
  fail_next(ApiKey::join_group, {ErrorCode::not_coordinator, ErrorCode::coordinator_load_in_progress});
  fail_next(ApiKey::offset_fetch, {ErrorCode::coordinator_load_in_progress, ErrorCode::not_coordinator});
  Consumer c(group_props());
  c.subscribe({"t"});
  EXPECT_EQ(poll_until(c, 20).size(), 20u);
  std::lock_guard lock(coord.mu);
  EXPECT_GE(coord.find_coordinator, 4);  // first two failed, then once more after each NOT_COORDINATOR
}

TEST_F(MockGroup, RebalanceInProgressRevokesCommitsAndRejoins) {
  Listener l;  // outlives the consumer, whose destructor revokes
  Consumer c(group_props({{"auto.commit.interval.ms", "600000"}}));
  c.subscribe({"t"}, &l);
  EXPECT_EQ(poll_until(c, 20).size(), 20u);
  fail_next(ApiKey::heartbeat, {ErrorCode::rebalance_in_progress});
  for (int i = 0; i < 20 && c.rebalance_count() < 2; ++i) c.poll(50ms);
  EXPECT_EQ(c.rebalance_count(), 2u);
  EXPECT_EQ(l.calls, (std::vector<std::string>{"assigned t-0,t-1", "revoked t-0,t-1", "assigned t-0,t-1"}));
  std::lock_guard lock(coord.mu);
  // Eager: everything handed out was committed (by the automatic commit before revoking).
  EXPECT_EQ(coord.committed[(TopicPartition{"t", 0})], 10);
  EXPECT_EQ(coord.committed[(TopicPartition{"t", 1})], 10);
  EXPECT_EQ(coord.commit_generations.back(), 1);
  EXPECT_EQ(coord.generation, 2);
}

TEST_F(MockGroup, UnknownMemberIdLosesThePartitionsAndRejoinsWithoutAnId) {
  Listener l;  // outlives the consumer, whose destructor revokes
  Consumer c(group_props());
  c.subscribe({"t"}, &l);
  EXPECT_EQ(poll_until(c, 20).size(), 20u);
  fail_next(ApiKey::heartbeat, {ErrorCode::unknown_member_id});
  for (int i = 0; i < 20 && c.rebalance_count() < 2; ++i) c.poll(50ms);
  EXPECT_EQ(l.calls, (std::vector<std::string>{"assigned t-0,t-1", "lost t-0,t-1", "assigned t-0,t-1"}));
  std::lock_guard lock(coord.mu);
  ASSERT_GE(coord.join_member_ids.size(), 3u);
  EXPECT_EQ(coord.join_member_ids[2], "");
}

TEST_F(MockGroup, IllegalGenerationOnCommitIsCommitFailed) {
  Listener l;  // outlives the consumer, whose destructor revokes
  Consumer c(group_props({{"enable.auto.commit", "false"}}));
  c.subscribe({"t"}, &l);
  EXPECT_EQ(poll_until(c, 20).size(), 20u);
  fail_next(ApiKey::offset_commit, {ErrorCode::illegal_generation});
  EXPECT_THROW(c.commit_sync(), client::CommitFailedError);
  c.poll(100ms);  // rejoins; the partitions were lost with the generation
  EXPECT_EQ(c.rebalance_count(), 2u);
  EXPECT_EQ(l.calls, (std::vector<std::string>{"assigned t-0,t-1", "lost t-0,t-1", "assigned t-0,t-1"}));
  fail_next(ApiKey::offset_commit, {ErrorCode::rebalance_in_progress});
  EXPECT_THROW(c.commit_sync(), client::RebalanceInProgressError);
}

TEST_F(MockGroup, FencedInstanceIdAndGroupAuthorizationAreFatal) {
  {
    Consumer c(group_props({{"group.instance.id", "i-1"}}));
    c.subscribe({"t"});
    EXPECT_EQ(poll_until(c, 20).size(), 20u);
    fail_next(ApiKey::heartbeat, {ErrorCode::fenced_instance_id});
    EXPECT_THROW(
        {
          for (int i = 0; i < 20; ++i) c.poll(50ms);
        },
        client::FencedInstanceIdError);
  }
  {
    std::lock_guard lock(coord.mu);
    EXPECT_EQ(coord.leaves, 0);  // a static member does not leave
  }
  fail_next(ApiKey::join_group, {ErrorCode::group_authorization_failed});
  Consumer d(group_props());
  d.subscribe({"t"});
  EXPECT_THROW(d.poll(100ms), client::GroupAuthorizationError);
}

TEST_F(MockGroup, AutoCommitCommitsOnlyWhatPollHandedOutAndCloseLeaves) {
  Consumer c(group_props({{"max.poll.records", "3"}, {"auto.commit.interval.ms", "600000"}}));
  c.subscribe({"t"});
  std::vector<Got> got;
  for (int i = 0; i < 50 && got.empty(); ++i) take(c.poll(100ms), got);
  ASSERT_EQ(got.size(), 3u);
  c.close();
  std::lock_guard lock(coord.mu);
  std::int64_t total = 0;
  for (auto& [tp, off] : coord.committed) total += off;
  EXPECT_EQ(total, 3);  // the three records handed out, not what was fetched
  EXPECT_EQ(coord.leaves, 1);
}

// The background thread heartbeats while the application processes between
// polls: no rejoin, no listener call, and the member's generation stays.
TEST_F(MockGroup, HeartbeatsContinueWhileTheApplicationDoesNotPoll) {
  Listener l;  // outlives the consumer, whose destructor revokes
  Consumer c(group_props());
  auto clock = std::make_shared<kwire_test::ManualTimerClock>();
  c.set_group_timer_clock(clock);
  c.subscribe({"t"}, &l);
  EXPECT_EQ(poll_until(c, 20).size(), 20u);
  int heartbeats_before = 0;
  std::size_t joins_before = 0;
  {
    std::lock_guard lock(coord.mu);
    heartbeats_before = coord.heartbeats;
    joins_before = coord.join_member_ids.size();
  }
  // heartbeat.interval.ms is 50: each 50 ms of the member's clock brings one
  // more heartbeat from the background thread, with no poll in between.
  for (int i = 1; i <= 10; ++i) {
    clock->advance(50ms);
    EXPECT_TRUE(wait_for_coord([&] { return coord.heartbeats - heartbeats_before >= i; }))
        << "no heartbeat " << i << " while the application was not polling";
  }
  c.poll(100ms);
  std::lock_guard lock(coord.mu);
  EXPECT_EQ(coord.join_member_ids.size(), joins_before);
  EXPECT_EQ(coord.leaves, 0);
  EXPECT_EQ(c.rebalance_count(), 1u);
  EXPECT_EQ(l.calls, std::vector<std::string>{"assigned t-0,t-1"});
}

// A heartbeat answered REBALANCE_IN_PROGRESS or UNKNOWN_MEMBER_ID while the
// application is away: the listener runs at its next poll, on its thread.
TEST_F(MockGroup, AFencingSeenByTheBackgroundThreadIsHandledAtTheNextPoll) {
  Listener l;  // outlives the consumer, whose destructor revokes
  Consumer c(group_props());
  c.subscribe({"t"}, &l);
  EXPECT_EQ(poll_until(c, 20).size(), 20u);
  fail_next(ApiKey::heartbeat, {ErrorCode::unknown_member_id});
  // The background thread has applied the answer once the member is out of
  // its generation; the listener waits for the next poll.
  const auto until = std::chrono::steady_clock::now() + 5s;
  while (c.group_metadata().generation != -1 && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(2ms);
  ASSERT_EQ(c.group_metadata().generation, -1) << "the heartbeat's UNKNOWN_MEMBER_ID was not applied";
  EXPECT_EQ(l.calls, std::vector<std::string>{"assigned t-0,t-1"});  // nothing called off the poll thread
  for (int i = 0; i < 20 && c.rebalance_count() < 2; ++i) c.poll(50ms);
  EXPECT_EQ(l.calls, (std::vector<std::string>{"assigned t-0,t-1", "lost t-0,t-1", "assigned t-0,t-1"}));
  std::lock_guard lock(coord.mu);
  ASSERT_GE(coord.join_member_ids.size(), 3u);
  EXPECT_EQ(coord.join_member_ids[2], "");
}

// poll() not called within max.poll.interval.ms: the member leaves at once
// (LeaveGroup, without waiting for the next poll); that poll gives the
// partitions up as lost and rejoins without a member id.
TEST_F(MockGroup, MaxPollIntervalExceededLeavesAndTheNextPollRejoins) {
  Listener l;  // outlives the consumer, whose destructor revokes
  Consumer c(group_props({{"max.poll.interval.ms", "400"}, {"enable.auto.commit", "false"}}));
  auto clock = std::make_shared<kwire_test::ManualTimerClock>();
  c.set_group_timer_clock(clock);
  c.subscribe({"t"}, &l);
  EXPECT_EQ(poll_until(c, 20).size(), 20u);
  clock->advance(401ms);  // past max.poll.interval.ms since the last poll
  EXPECT_TRUE(wait_for_coord([&] { return coord.leaves == 1; }))
      << "no LeaveGroup while the application was not polling";
  EXPECT_EQ(c.group_metadata().generation, -1);
  EXPECT_EQ(l.calls, std::vector<std::string>{"assigned t-0,t-1"});
  for (int i = 0; i < 20 && c.rebalance_count() < 2; ++i) c.poll(50ms);
  EXPECT_EQ(l.calls, (std::vector<std::string>{"assigned t-0,t-1", "lost t-0,t-1", "assigned t-0,t-1"}));
}

// close(timeout) returns by then even when the coordinator no longer answers
// (the final commit and the leave are abandoned).
TEST_F(MockGroup, CloseWithATimeoutReturnsWhenTheCoordinatorIsUnreachable) {
  Consumer c(group_props({{"default.api.timeout.ms", "60000"}, {"auto.commit.interval.ms", "600000"}}));
  c.subscribe({"t"});
  EXPECT_EQ(poll_until(c, 20).size(), 20u);
  cluster.set_broker_down(1, true);
  const auto t0 = std::chrono::steady_clock::now();
  c.close(500ms);
  const auto took = std::chrono::steady_clock::now() - t0;
  // Without the timeout the commit would retry for default.api.timeout.ms (60 s).
  EXPECT_LT(took, 20s);
  cluster.set_broker_down(1, false);
  std::lock_guard lock(coord.mu);
  EXPECT_TRUE(coord.committed.empty());
}

// GroupAdmin: offsets altered and read back on the group's behalf (outside
// any generation), through a coordinator that moves and loads.
TEST_F(MockGroup, GroupAdminAltersAndReadsOffsetsAcrossCoordinatorMoves) {
  fail_next(ApiKey::find_coordinator, {ErrorCode::coordinator_not_available});
  fail_next(ApiKey::offset_commit, {ErrorCode::not_coordinator});
  fail_next(ApiKey::offset_fetch, {ErrorCode::coordinator_load_in_progress});
  client::KafkaClient kc(props(cluster));
  client::GroupAdmin admin(kc);
  admin.alter_offsets("g", {{TopicPartition{"t", 0}, 5}, {TopicPartition{"t", 1}, 7}});
  auto got = admin.committed_offsets("g", {{"t", 1}, {"t", 0}});
  ASSERT_EQ(got.size(), 2u);
  EXPECT_EQ(got.at(TopicPartition{"t", 0}).offset, 5);
  EXPECT_EQ(got.at(TopicPartition{"t", 1}).offset, 7);
  std::lock_guard lock(coord.mu);
  EXPECT_EQ(coord.committed[(TopicPartition{"t", 0})], 5);
  ASSERT_EQ(coord.commit_generations.size(), 2u);  // NOT_COORDINATOR, then again
  EXPECT_EQ(coord.commit_generations.back(), -1);  // not as a member
  // COORDINATOR_NOT_AVAILABLE, found, found again after NOT_COORDINATOR; the
  // load is retried on the same (cached) coordinator.
  EXPECT_EQ(coord.find_coordinator, 3);
}

// group.protocol=consumer (KIP-848) against a scripted coordinator that
// assigns t-0 and t-1 at once and then confirms; a queued error comes first.
TEST_F(MockGroup, ConsumerProtocolFencedMemberEpochLosesAndRejoinsAtEpochZero) {
  const auto topic_id = *cluster.topic_id("t");
  struct Kip848 {
    std::mutex mu;
    std::deque<std::int16_t> errors;
    std::vector<std::int32_t> epochs_sent;
    std::vector<std::string> member_ids_sent;
    std::vector<std::size_t> owned_sent;
    std::int32_t epoch = 0;
  } k;
  cluster.set_handler(
      ApiKey::consumer_group_heartbeat, 0, 1,
      [&k, topic_id](std::int32_t, std::int16_t v, std::int32_t corr, const Bytes& p) -> std::optional<Bytes> {
        std::lock_guard lock(k.mu);
        auto req = Coordinator::request<ConsumerGroupHeartbeatRequest>(p, v);
        k.epochs_sent.push_back(req.member_epoch);
        k.member_ids_sent.push_back(req.member_id);
        std::size_t owned = 0;
        if (req.topic_partitions)
          for (auto& t : *req.topic_partitions) owned += t.partitions.size();
        k.owned_sent.push_back(owned);
        ConsumerGroupHeartbeatResponse r;
        r.heartbeat_interval_ms = 100;
        if (!k.errors.empty()) {
          r.error_code = k.errors.front();
          k.errors.pop_front();
          return encode_response_frame(r, v, corr);
        }
        r.member_id = req.member_id;
        if (req.member_epoch == 0) {
          r.member_epoch = ++k.epoch;
          r.assignment.emplace();
          r.assignment->topic_partitions.push_back({topic_id, {0, 1}, {}});
        } else {
          r.member_epoch = k.epoch;
        }
        return encode_response_frame(r, v, corr);
      });
  Listener l;  // outlives the consumer, whose destructor revokes
  Consumer c(props(cluster, {{"group.id", "g"}, {"group.protocol", "consumer"}, {"auto.offset.reset", "earliest"}}));
  c.subscribe({"t"}, &l);
  EXPECT_EQ(poll_until(c, 20).size(), 20u);
  {
    std::lock_guard lock(k.mu);
    k.errors.push_back(static_cast<std::int16_t>(ErrorCode::fenced_member_epoch));
  }
  for (int i = 0; i < 30 && l.calls.size() < 3; ++i) c.poll(50ms);
  EXPECT_EQ(l.calls, (std::vector<std::string>{"assigned t-0,t-1", "lost t-0,t-1", "assigned t-0,t-1"}));
  c.close();
  std::lock_guard lock(k.mu);
  ASSERT_GE(k.epochs_sent.size(), 4u);
  EXPECT_EQ(k.epochs_sent.front(), 0);
  EXPECT_EQ(k.member_ids_sent.front().size(), 22u);  // v1: a base64 UUID made by the member
  EXPECT_EQ(k.owned_sent[1], 2u);                    // the assignment acknowledged
  // After the fencing: a heartbeat at epoch 0 owning nothing, with the same member id.
  bool rejoined = false;
  for (std::size_t i = 1; i < k.epochs_sent.size(); ++i)
    if (k.epochs_sent[i] == 0 && k.owned_sent[i] == 0 && k.member_ids_sent[i] == k.member_ids_sent.front())
      rejoined = true;
  EXPECT_TRUE(rejoined);
  EXPECT_EQ(k.epochs_sent.back(), -1);  // close() leaves with epoch -1
}

// KIP-848: poll() not called within max.poll.interval.ms: the background
// thread leaves with epoch -1 at once; the next poll() gives the partitions
// up as lost and rejoins at epoch 0 with the same member id.
TEST_F(MockGroup, ConsumerProtocolMaxPollIntervalLeavesWithEpochMinusOne) {
  const auto topic_id = *cluster.topic_id("t");
  struct Kip848 {
    std::mutex mu;
    std::vector<std::int32_t> epochs_sent;
    std::vector<std::string> member_ids_sent;
    std::int32_t epoch = 0;
  } k;
  cluster.set_handler(
      ApiKey::consumer_group_heartbeat, 0, 1,
      [&k, topic_id](std::int32_t, std::int16_t v, std::int32_t corr, const Bytes& p) -> std::optional<Bytes> {
        std::lock_guard lock(k.mu);
        auto req = Coordinator::request<ConsumerGroupHeartbeatRequest>(p, v);
        k.epochs_sent.push_back(req.member_epoch);
        k.member_ids_sent.push_back(req.member_id);
        ConsumerGroupHeartbeatResponse r;
        r.heartbeat_interval_ms = 100;
        r.member_id = req.member_id;
        if (req.member_epoch == 0) {
          r.member_epoch = ++k.epoch;
          r.assignment.emplace();
          r.assignment->topic_partitions.push_back({topic_id, {0, 1}, {}});
        } else {
          r.member_epoch = req.member_epoch < 0 ? req.member_epoch : k.epoch;
        }
        return encode_response_frame(r, v, corr);
      });
  Listener l;  // outlives the consumer, whose destructor revokes
  Consumer c(props(cluster, {{"group.id", "g"},
                             {"group.protocol", "consumer"},
                             {"auto.offset.reset", "earliest"},
                             {"enable.auto.commit", "false"},
                             {"max.poll.interval.ms", "400"}}));
  auto clock = std::make_shared<kwire_test::ManualTimerClock>();
  c.set_group_timer_clock(clock);
  c.subscribe({"t"}, &l);
  EXPECT_EQ(poll_until(c, 20).size(), 20u);
  clock->advance(401ms);  // past max.poll.interval.ms since the last poll
  bool left = false;
  std::size_t heartbeats_before_leave = 0;
  for (int i = 0; i < 2500 && !left; ++i) {
    std::this_thread::sleep_for(2ms);
    std::lock_guard lock(k.mu);
    left = !k.epochs_sent.empty() && k.epochs_sent.back() == -1;
    heartbeats_before_leave = k.epochs_sent.size();
  }
  EXPECT_TRUE(left) << "no leave heartbeat while the application was not polling";
  EXPECT_EQ(l.calls, std::vector<std::string>{"assigned t-0,t-1"});
  for (int i = 0; i < 30 && l.calls.size() < 3; ++i) c.poll(50ms);
  EXPECT_EQ(l.calls, (std::vector<std::string>{"assigned t-0,t-1", "lost t-0,t-1", "assigned t-0,t-1"}));
  c.close();
  std::lock_guard lock(k.mu);
  ASSERT_GT(k.epochs_sent.size(), heartbeats_before_leave);
  EXPECT_EQ(k.epochs_sent[heartbeats_before_leave], 0);                              // rejoined at epoch 0...
  EXPECT_EQ(k.member_ids_sent[heartbeats_before_leave], k.member_ids_sent.front());  // ...as the same member
}

// KIP-848: a static member whose group.instance.id is still held by an
// earlier member that has not left gets UNRELEASED_INSTANCE_ID; as in Java's
// consumer the error is fatal (raised from poll, not retried).
TEST_F(MockGroup, ConsumerProtocolUnreleasedInstanceIdIsFatal) {
  struct Seen {
    std::mutex mu;
    std::vector<std::optional<std::string>> instance_ids;
  } seen;
  cluster.set_handler(ApiKey::consumer_group_heartbeat, 0, 1,
                      [&seen](std::int32_t, std::int16_t v, std::int32_t corr, const Bytes& p) -> std::optional<Bytes> {
                        auto req = Coordinator::request<ConsumerGroupHeartbeatRequest>(p, v);
                        std::lock_guard lock(seen.mu);
                        seen.instance_ids.push_back(req.instance_id);
                        ConsumerGroupHeartbeatResponse r;
                        r.heartbeat_interval_ms = 100;
                        r.error_code = static_cast<std::int16_t>(ErrorCode::unreleased_instance_id);
                        return encode_response_frame(r, v, corr);
                      });
  Consumer c(props(cluster, {{"group.id", "g"}, {"group.protocol", "consumer"}, {"group.instance.id", "i-1"}}));
  c.subscribe({"t"});
  try {
    for (int i = 0; i < 20; ++i) c.poll(50ms);
    FAIL() << "expected a KafkaError";
  } catch (const client::KafkaError& e) {
    EXPECT_EQ(e.code(), static_cast<std::int16_t>(ErrorCode::unreleased_instance_id));
    const std::string what = e.what();
    EXPECT_NE(what.find("UNRELEASED_INSTANCE_ID"), std::string::npos) << what;
    EXPECT_NE(what.find("group g"), std::string::npos) << what;
  }
  std::lock_guard lock(seen.mu);
  ASSERT_EQ(seen.instance_ids.size(), 1u);  // not retried
  EXPECT_EQ(seen.instance_ids.front(), std::optional<std::string>("i-1"));
}
