// A consumer-protocol (KIP-848) member committing against a scripted
// coordinator on the mock cluster: a commit answered STALE_MEMBER_EPOCH while
// the member is still in the group is retried with the epoch one heartbeat
// brings (as the Java consumer does); a fenced member's commit fails; an
// OffsetFetch answered UNSTABLE_OFFSET_COMMIT (a transactional commit still
// pending) is asked again until the offsets are stable; heartbeats name owned
// partitions by topic ids from the metadata cache.
#include <gtest/gtest.h>

#include <deque>
#include <mutex>
#include <thread>

#include "kwire/client/errors.hpp"
#include "kwire/protocol/messages.hpp"
#include "mock_consumer_support.hpp"

using namespace std::chrono_literals;
using namespace kwire;
using namespace kwire::mock_support;
using namespace kwire::protocol;
using client::Consumer;
using client::OffsetAndMetadata;
using client::TopicPartition;

namespace {

template <class Req>
Req request_of(const Bytes& payload, std::int16_t v) {
  Reader r{ByteSpan(payload)};
  Req req;
  RequestHeader h;
  decode_request(r, req, v, &h);
  return req;
}

// One group "g" whose only member is the consumer under test; the
// coordinator is broker 1. The member epoch moves only when the test says so.
struct Coordinator {
  std::mutex mu;
  std::int32_t epoch = 0;
  std::deque<std::int16_t> heartbeat_errors;
  std::deque<std::int16_t> fetch_errors;  // per-partition errors of the next OffsetFetch answers
  std::vector<std::int32_t> commit_epochs;
  std::map<TopicPartition, std::int64_t> committed;
  int heartbeats = 0, offset_fetches = 0;
  std::int32_t interval_ms = 60000;  // heartbeat.interval.ms the coordinator asks for

  void install(mock::MockCluster& c, Uuid topic_id) {
    const std::int32_t port = c.port(1);
    c.set_handler(ApiKey::find_coordinator, 0, 6,
                  [port](std::int32_t, std::int16_t v, std::int32_t corr, const Bytes&) -> std::optional<Bytes> {
                    FindCoordinatorResponse r;
                    r.node_id = 1;
                    r.host = "127.0.0.1";
                    r.port = port;
                    r.coordinators.push_back({"g", 1, "127.0.0.1", port, 0, std::nullopt, {}});
                    return encode_response_frame(r, v, corr);
                  });
    c.set_handler(
        ApiKey::consumer_group_heartbeat, 0, 1,
        [this, topic_id](std::int32_t, std::int16_t v, std::int32_t corr, const Bytes& p) -> std::optional<Bytes> {
          std::lock_guard lock(mu);
          ++heartbeats;
          auto req = request_of<ConsumerGroupHeartbeatRequest>(p, v);
          ConsumerGroupHeartbeatResponse r;
          r.heartbeat_interval_ms = interval_ms;
          if (!heartbeat_errors.empty()) {
            r.error_code = heartbeat_errors.front();
            heartbeat_errors.pop_front();
            return encode_response_frame(r, v, corr);
          }
          r.member_id = req.member_id;
          if (req.member_epoch == 0) {
            r.member_epoch = ++epoch;
            r.assignment.emplace();
            r.assignment->topic_partitions.push_back({topic_id, {0, 1}, {}});
          } else {
            r.member_epoch = epoch;
          }
          return encode_response_frame(r, v, corr);
        });
    c.set_handler(ApiKey::offset_commit, 0, 9,
                  [this](std::int32_t, std::int16_t v, std::int32_t corr, const Bytes& p) -> std::optional<Bytes> {
                    std::lock_guard lock(mu);
                    auto req = request_of<OffsetCommitRequest>(p, v);
                    commit_epochs.push_back(req.generation_id_or_member_epoch);
                    const std::int16_t e = req.generation_id_or_member_epoch == epoch
                                               ? 0
                                               : static_cast<std::int16_t>(ErrorCode::stale_member_epoch);
                    OffsetCommitResponse r;
                    for (auto& t : req.topics) {
                      r.topics.push_back({t.name, {}, {}});
                      for (auto& part : t.partitions) {
                        r.topics.back().partitions.push_back({part.partition_index, e, {}});
                        if (!e) committed[{t.name, part.partition_index}] = part.committed_offset;
                      }
                    }
                    return encode_response_frame(r, v, corr);
                  });
    c.set_handler(ApiKey::offset_fetch, 0, 9,
                  [this](std::int32_t, std::int16_t v, std::int32_t corr, const Bytes& p) -> std::optional<Bytes> {
                    std::lock_guard lock(mu);
                    ++offset_fetches;
                    auto req = request_of<OffsetFetchRequest>(p, v);
                    std::int16_t e = 0;
                    if (!fetch_errors.empty()) {
                      e = fetch_errors.front();
                      fetch_errors.pop_front();
                    }
                    OffsetFetchResponse r;
                    const auto& topics = v >= 8 ? req.groups.at(0).topics : req.topics;
                    std::vector<OffsetFetchResponse::OffsetFetchResponseTopic> out;
                    for (auto& t : *topics) {
                      out.push_back({t.name, {}, {}});
                      for (auto part : t.partition_indexes) {
                        auto it = committed.find({t.name, part});
                        out.back().partitions.push_back(
                            {part, e || it == committed.end() ? -1 : it->second, -1, std::string(), e, {}});
                      }
                    }
                    if (v >= 8) r.groups.push_back({"g", out, 0, {}});
                    else r.topics = out;
                    return encode_response_frame(r, v, corr);
                  });
  }
};

class MockGroupCommit : public ::testing::Test {
 protected:
  void SetUp() override {
    cluster.create_topic("t", 2);
    cluster.append_values("t", 0, 5);
    cluster.append_values("t", 1, 5);
    coord.install(cluster, *cluster.topic_id("t"));
  }
  Props member_props() {
    return props(cluster, {{"group.id", "g"},
                           {"group.protocol", "consumer"},
                           {"auto.offset.reset", "earliest"},
                           {"enable.auto.commit", "false"}});
  }
  // The member's first two heartbeats, the join and the acknowledgement of
  // its assignment (the background thread's, right after poll() took the
  // assignment), have reached the coordinator: a test's scripted answers
  // go to the heartbeats it causes.
  void wait_acknowledged() {
    const auto until = std::chrono::steady_clock::now() + 3s;
    for (;;) {
      {
        std::lock_guard lock(coord.mu);
        if (coord.heartbeats >= 2 || std::chrono::steady_clock::now() >= until) {
          ASSERT_GE(coord.heartbeats, 2);
          return;
        }
      }
      std::this_thread::sleep_for(5ms);
    }
  }
  mock::MockCluster cluster{1};
  Coordinator coord;
};

}  // namespace

TEST_F(MockGroupCommit, StaleMemberEpochIsRetriedWithTheEpochAHeartbeatBrings) {
  Consumer c(member_props());
  c.subscribe({"t"});
  ASSERT_EQ(poll_until(c, 10).size(), 10u);
  wait_acknowledged();
  int heartbeats_before = 0;
  {
    std::lock_guard lock(coord.mu);
    ASSERT_EQ(coord.epoch, 1);
    coord.epoch = 2;  // the group moved on; the member has not heard yet
    heartbeats_before = coord.heartbeats;
    coord.commit_epochs.clear();
  }
  c.commit_sync({{{"t", 0}, OffsetAndMetadata{5, -1, ""}}, {{"t", 1}, OffsetAndMetadata{4, -1, ""}}});
  std::lock_guard lock(coord.mu);
  EXPECT_EQ(coord.commit_epochs, (std::vector<std::int32_t>{1, 2}));
  EXPECT_EQ(coord.heartbeats, heartbeats_before + 1);
  EXPECT_EQ(coord.committed.at({"t", 0}), 5);
  EXPECT_EQ(coord.committed.at({"t", 1}), 4);
}

TEST_F(MockGroupCommit, StaleMemberEpochOfAFencedMemberIsCommitFailed) {
  Consumer c(member_props());
  c.subscribe({"t"});
  ASSERT_EQ(poll_until(c, 10).size(), 10u);
  wait_acknowledged();
  {
    std::lock_guard lock(coord.mu);
    coord.epoch = 2;
    coord.heartbeat_errors.push_back(static_cast<std::int16_t>(ErrorCode::fenced_member_epoch));
    coord.commit_epochs.clear();
  }
  try {
    c.commit_sync({{{"t", 0}, OffsetAndMetadata{5, -1, ""}}});
    FAIL() << "expected CommitFailedError";
  } catch (const client::CommitFailedError& e) {
    EXPECT_EQ(e.code(), static_cast<std::int16_t>(ErrorCode::stale_member_epoch));
    EXPECT_NE(std::string(e.what()).find("STALE_MEMBER_EPOCH"), std::string::npos) << e.what();
  }
  std::lock_guard lock(coord.mu);
  EXPECT_EQ(coord.commit_epochs, (std::vector<std::int32_t>{1}));
  EXPECT_TRUE(coord.committed.empty());
}

TEST_F(MockGroupCommit, UnstableOffsetCommitOnOffsetFetchIsAskedAgainUntilStable) {
  {
    std::lock_guard lock(coord.mu);
    coord.committed[{"t", 0}] = 3;
    coord.committed[{"t", 1}] = 2;
    coord.fetch_errors = {static_cast<std::int16_t>(ErrorCode::unstable_offset_commit),
                          static_cast<std::int16_t>(ErrorCode::unstable_offset_commit)};
  }
  Consumer c(member_props());
  c.subscribe({"t"});
  auto got = poll_until(c, 5);
  auto want = expected("t-0", 3, 5);
  auto w1 = expected("t-1", 2, 5);
  want.insert(want.end(), w1.begin(), w1.end());
  EXPECT_EQ(sorted(got), sorted(want));  // started at the committed offsets once they were stable
  auto committed = c.committed({{"t", 0}, {"t", 1}});
  ASSERT_TRUE(committed.at({"t", 0}));
  EXPECT_EQ(committed.at({"t", 0})->offset, 3);
  std::lock_guard lock(coord.mu);
  EXPECT_GE(coord.offset_fetches, 4);  // two refused, one for the start positions, one asked above
  EXPECT_TRUE(coord.fetch_errors.empty());
}

// Heartbeats every 50 ms for half a second: the owned partitions' topic ids
// come from the metadata cache, so no heartbeat costs a Metadata request.
TEST_F(MockGroupCommit, HeartbeatsTakeTopicIdsFromTheMetadataCache) {
  {
    std::lock_guard lock(coord.mu);
    coord.interval_ms = 50;
  }
  Consumer c(member_props());
  c.subscribe({"t"});
  ASSERT_EQ(poll_until(c, 10).size(), 10u);
  cluster.clear_requests();
  // Polls until the background thread has sent 5 heartbeats (50 ms apart), 3 s at most.
  const auto until = std::chrono::steady_clock::now() + 3s;
  while (std::chrono::steady_clock::now() < until && cluster.requests(ApiKey::consumer_group_heartbeat).size() < 5)
    c.poll(50ms);
  const auto heartbeats = cluster.requests(ApiKey::consumer_group_heartbeat);
  ASSERT_GE(heartbeats.size(), 5u);
  EXPECT_LE(cluster.requests(ApiKey::metadata).size(), 1u);
}
