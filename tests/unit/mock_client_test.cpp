// Client retry and failure paths against the in-process mock cluster: version
// negotiation, retriable errors, leader moves, lost connections, truncated
// batches, throttling, log-start moves, topic recreation and timeouts.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "kwire/client/consumer.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/client/kafka_client.hpp"
#include "kwire/client/producer.hpp"
#include "kwire/mock/mock_cluster.hpp"
#include "kwire/protocol/messages.hpp"
#include "mock_consumer_support.hpp"

using namespace std::chrono_literals;
using kwire::client::ClientError;
using kwire::client::Consumer;
using kwire::client::KafkaClient;
using kwire::client::KafkaError;
using kwire::client::OffsetOutOfRangeError;
using kwire::client::Producer;
using kwire::client::ProducerMessage;
using kwire::client::TimeoutError;
using kwire::client::TopicPartition;
using kwire::mock::Fault;
using kwire::mock::MockCluster;
using kwire::mock::RequestRecord;
using kwire::protocol::ApiKey;
using kwire::protocol::ErrorCode;
using namespace kwire::mock_support;

namespace {

// Index in `reqs` of every request of `api` that names topic-partition.
std::vector<std::size_t> indexes(const std::vector<RequestRecord>& reqs, ApiKey api, const std::string& topic,
                                 std::int32_t partition) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < reqs.size(); ++i)
    if (reqs[i].api_key == api && reqs[i].mentions(topic, partition)) out.push_back(i);
  return out;
}

std::int64_t offset_of(const RequestRecord& r, const std::string& topic, std::int32_t partition) {
  for (auto& p : r.partitions)
    if (p.topic == topic && p.partition == partition) return p.offset;
  return -100;
}

bool metadata_between(const std::vector<RequestRecord>& reqs, std::size_t a, std::size_t b) {
  for (std::size_t i = a + 1; i < b; ++i)
    if (reqs[i].api_key == ApiKey::metadata) return true;
  return false;
}

std::int64_t ms_between(const RequestRecord& a, const RequestRecord& b) {
  return std::chrono::duration_cast<std::chrono::milliseconds>(b.received - a.received).count();
}

const TopicPartition t0{"t", 0};
const TopicPartition t1{"t", 1};

}  // namespace

// ----------------------------------------------------------- versions

TEST(MockClient, ApiVersionsFallsBackToV0WhenV3IsUnsupported) {
  MockCluster c;
  c.set_max_version(ApiKey::api_versions, 2);
  c.create_topic("t", 1);
  KafkaClient client(props(c));
  auto md = client.metadata(std::vector<std::string>{"t"});
  ASSERT_NE(md.topic("t"), nullptr);
  EXPECT_EQ(md.topic("t")->error_code, 0);
  auto av = c.requests(ApiKey::api_versions);
  ASSERT_EQ(av.size(), 2u) << dump(c.requests());
  EXPECT_EQ(av[0].version, 3);
  EXPECT_EQ(av[1].version, 0);
  auto m = c.requests(ApiKey::metadata);
  ASSERT_EQ(m.size(), 1u);
  EXPECT_EQ(m[0].version, kwire::protocol::MetadataRequest::max_version);
}

TEST(MockClient, ApiVersionsV3IsUsedWhenSupported) {
  MockCluster c;
  KafkaClient client(props(c));
  client.metadata(std::vector<std::string>{});
  auto av = c.requests(ApiKey::api_versions);
  ASSERT_EQ(av.size(), 1u);
  EXPECT_EQ(av[0].version, 3);
}

struct VersionCase {
  std::int16_t fetch_max;
  std::int16_t metadata_max;
  std::int16_t expect_fetch;
  bool expect_ids;
};

class MockVersions : public ::testing::TestWithParam<VersionCase> {};

TEST_P(MockVersions, NegotiatesMinOfBothSidesAndNamesTopicsAccordingly) {
  auto vc = GetParam();
  MockCluster c;
  c.set_max_version(ApiKey::fetch, vc.fetch_max);
  c.set_max_version(ApiKey::metadata, vc.metadata_max);
  c.set_max_version(ApiKey::list_offsets, 3);
  auto id = c.create_topic("t", 1);
  c.append_values("t", 0, 5, 2);
  Consumer cons(props(c, {{"auto.offset.reset", "earliest"}}));
  cons.assign({t0});
  EXPECT_EQ(poll_until(cons, 5), expected("t-0", 0, 5));
  auto fetches = c.requests(ApiKey::fetch);
  ASSERT_FALSE(fetches.empty());
  for (auto& f : fetches) {
    EXPECT_EQ(f.version, vc.expect_fetch) << kwire::mock::describe(f);
    EXPECT_EQ(f.by_topic_id, vc.expect_ids);
    if (vc.expect_ids) {
      ASSERT_EQ(f.topic_ids.size(), 1u);
      EXPECT_EQ(f.topic_ids[0], id);
    }
    EXPECT_EQ(f.partitions.at(0).topic, "t");
  }
  for (auto& r : c.requests(ApiKey::list_offsets)) EXPECT_EQ(r.version, 3);
  for (auto& r : c.requests(ApiKey::metadata)) EXPECT_EQ(r.version, vc.metadata_max);
}

INSTANTIATE_TEST_SUITE_P(Versions, MockVersions,
                         ::testing::Values(VersionCase{4, 13, 4, false}, VersionCase{11, 13, 11, false},
                                           VersionCase{12, 13, 12, false}, VersionCase{13, 13, 13, true},
                                           VersionCase{18, 13, 18, true},
                                           // no topic ids in Metadata below v10: Fetch stays on names
                                           VersionCase{18, 9, 12, false}));

// ------------------------------------------------- retriable errors

class MockRetriable : public ::testing::TestWithParam<ErrorCode> {};

TEST_P(MockRetriable, FetchErrorRefreshesMetadataBacksOffAndResumesAtSameOffset) {
  const auto code = GetParam();
  MockCluster c;
  c.create_topic("t", 2, {1, 1});
  c.append_values("t", 0, 5);
  c.append_values("t", 1, 5);
  c.fail_next(ApiKey::fetch, "t", 0, code, 2);
  Consumer cons(props(c, {{"auto.offset.reset", "earliest"}, {"retry.backoff.ms", "50"}}));
  cons.assign({t0, t1});
  auto first = cons.poll(2000ms);
  // t-1 is delivered although t-0 failed in the same response.
  ASSERT_FALSE(first.empty());
  for (auto& r : first) EXPECT_EQ(r.partition, 1);
  std::vector<Got> got;
  for (auto& r : first) got.push_back({"t-1", r.offset, std::string(r.value_view())});
  auto rest = poll_until(cons, 10 - got.size());
  got.insert(got.end(), rest.begin(), rest.end());
  auto want = expected("t-0", 0, 5);
  auto w1 = expected("t-1", 0, 5);
  want.insert(want.end(), w1.begin(), w1.end());
  EXPECT_EQ(sorted(got), sorted(want));
  EXPECT_EQ(got.size(), 10u);

  auto reqs = c.requests();
  auto f0 = indexes(reqs, ApiKey::fetch, "t", 0);
  ASSERT_GE(f0.size(), 3u) << dump(reqs);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(offset_of(reqs[f0[i]], "t", 0), 0) << dump(reqs);
  for (int i = 0; i < 2; ++i) {
    EXPECT_TRUE(metadata_between(reqs, f0[i], f0[i + 1])) << dump(reqs);
    // retry.backoff.ms with KIP-580's jitter: at least 0.8 x 50 ms.
    EXPECT_GE(ms_between(reqs[f0[i]], reqs[f0[i + 1]]), 39) << dump(reqs);
  }
  // While t-0 backed off, t-1 kept being fetched (at its next offset).
  bool t1_flowed = false;
  for (std::size_t i = f0[0] + 1; i < f0[1]; ++i)
    if (reqs[i].api_key == ApiKey::fetch && offset_of(reqs[i], "t", 1) == 5) t1_flowed = true;
  EXPECT_TRUE(t1_flowed) << dump(reqs);
  EXPECT_EQ(c.pending_faults(), 0u);
}

TEST_P(MockRetriable, ListOffsetsErrorRefreshesMetadataAndRetriesOnlyTheFailedPartition) {
  const auto code = GetParam();
  MockCluster c;
  c.create_topic("t", 2, {1, 1});
  c.append_values("t", 0, 5);
  c.append_values("t", 1, 3);
  c.fail_next(ApiKey::list_offsets, "t", 0, code, 2);
  KafkaClient client(props(c, {{"retry.backoff.ms", "50"}}));
  auto out = client.list_offsets({{t0, kwire::client::kLatestTimestamp}, {t1, kwire::client::kLatestTimestamp}});
  EXPECT_EQ(out.at(t0).offset, 5);
  EXPECT_EQ(out.at(t1).offset, 3);
  auto reqs = c.requests();
  std::vector<std::size_t> lo;
  for (std::size_t i = 0; i < reqs.size(); ++i)
    if (reqs[i].api_key == ApiKey::list_offsets) lo.push_back(i);
  ASSERT_EQ(lo.size(), 3u) << dump(reqs);
  EXPECT_EQ(reqs[lo[0]].partitions.size(), 2u);
  for (int i = 1; i < 3; ++i) {
    ASSERT_EQ(reqs[lo[i]].partitions.size(), 1u) << dump(reqs);
    EXPECT_EQ(reqs[lo[i]].partitions[0], (kwire::mock::RequestedPartition{"t", 0, -1}));
    EXPECT_TRUE(metadata_between(reqs, lo[i - 1], lo[i])) << dump(reqs);
    // retry.backoff.ms with KIP-580's jitter: at least 0.8 x 50 ms.
    EXPECT_GE(ms_between(reqs[lo[i - 1]], reqs[lo[i]]), 39) << dump(reqs);
  }
}

INSTANTIATE_TEST_SUITE_P(Errors, MockRetriable,
                         ::testing::Values(ErrorCode::not_leader_or_follower, ErrorCode::leader_not_available,
                                           ErrorCode::unknown_topic_or_partition, ErrorCode::fenced_leader_epoch),
                         [](const auto& info) { return std::string(kwire::protocol::error_name(info.param)); });

TEST(MockClient, ListOffsetsRetryBudgetExhaustedNamesPartitionAndError) {
  MockCluster c;
  c.create_topic("t", 1);
  c.fail_next(ApiKey::list_offsets, "t", 0, ErrorCode::not_leader_or_follower, 100);
  KafkaClient client(props(c, {{"retries", "2"}, {"retry.backoff.ms", "5"}}));
  try {
    client.list_offsets({{t0, kwire::client::kEarliestTimestamp}});
    FAIL() << "expected KafkaError";
  } catch (const KafkaError& e) {
    EXPECT_EQ(e.code(), static_cast<std::int16_t>(ErrorCode::not_leader_or_follower));
    EXPECT_NE(std::string(e.what()).find("t-0"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("NOT_LEADER_OR_FOLLOWER"), std::string::npos) << e.what();
  }
  EXPECT_EQ(c.requests(ApiKey::list_offsets).size(), 3u);
}

// A partition without a leader for far longer than `retries` allows: the
// consumer keeps asking (metadata refreshed, backing off) and reads on once
// the partition is back, as the Java consumer does; the healthy partition
// flows meanwhile.
TEST(MockClient, FetchLeadershipErrorsOutlastingRetriesAreWaitedOut) {
  MockCluster c;
  c.create_topic("t", 2, {1, 1});
  c.append_values("t", 0, 3);
  c.append_values("t", 1, 3);
  c.fail_next(ApiKey::fetch, "t", 0, ErrorCode::leader_not_available, 15);
  Consumer cons(props(c, {{"retries", "2"}, {"retry.backoff.ms", "5"}, {"retry.backoff.max.ms", "20"}}));
  cons.assign({t0, t1});
  cons.seek(t0, 0);
  cons.seek(t1, 0);
  auto got = poll_until(cons, 6, 10000ms);  // throws on any error
  auto want = expected("t-0", 0, 3);
  auto w1 = expected("t-1", 0, 3);
  want.insert(want.end(), w1.begin(), w1.end());
  EXPECT_EQ(sorted(got), sorted(want));
  EXPECT_EQ(c.pending_faults(), 0u);
  auto reqs = c.requests();
  auto f0 = indexes(reqs, ApiKey::fetch, "t", 0);
  ASSERT_GE(f0.size(), 16u) << dump(reqs);
  // 15 refused, then the one that brought the records: all at offset 0.
  for (std::size_t k = 0; k < 16; ++k) EXPECT_EQ(offset_of(reqs[f0[k]], "t", 0), 0) << dump(reqs);
}

// ------------------------------------------------------- leader move

// After a leader move the old leader refuses the next Fetch. From Fetch v12
// its answer names the new leader and epoch (KIP-951): the consumer goes
// there at once, with no Metadata request; before v12 it refreshes metadata
// first. Either way t-0 continues at the same offset on broker 2.
class MockLeaderMove : public ::testing::TestWithParam<std::int16_t> {};

TEST_P(MockLeaderMove, SendsRequestsToTheNewLeader) {
  const std::int16_t fetch_version = GetParam();
  MockCluster c(2);
  c.set_max_version(ApiKey::fetch, fetch_version);
  c.create_topic("t", 2, {1, 2});
  c.append_values("t", 0, 3);
  c.append_values("t", 1, 3);
  Consumer cons(props(c, {{"auto.offset.reset", "earliest"}}));
  cons.assign({t0, t1});
  EXPECT_EQ(poll_until(cons, 6).size(), 6u);

  // The whole request log is checked: the consumer already has its next
  // fetch to each leader in flight (sent before the move).
  c.move_leader("t", 0, 2);
  c.append_values("t", 0, 3);
  c.append_values("t", 1, 3);
  auto got = poll_until(cons, 6);
  auto want = expected("t-0", 3, 6);
  auto w1 = expected("t-1", 3, 6);
  want.insert(want.end(), w1.begin(), w1.end());
  EXPECT_EQ(sorted(got), sorted(want));

  auto reqs = c.requests();
  auto f0 = indexes(reqs, ApiKey::fetch, "t", 0);
  ASSERT_GE(f0.size(), 2u) << dump(reqs);
  EXPECT_EQ(reqs[f0[0]].broker, 1) << dump(reqs);
  std::size_t first_new = 0;
  while (first_new < f0.size() && reqs[f0[first_new]].broker != 2) ++first_new;
  ASSERT_LT(first_new, f0.size()) << dump(reqs);
  EXPECT_EQ(offset_of(reqs[f0[first_new]], "t", 0), 3);
  EXPECT_EQ(metadata_between(reqs, f0[first_new - 1], f0[first_new]), fetch_version < 12) << dump(reqs);
  for (std::size_t i = first_new; i < f0.size(); ++i) EXPECT_EQ(reqs[f0[i]].broker, 2) << dump(reqs);
  // t-1 stayed on broker 2 throughout.
  for (auto i : indexes(reqs, ApiKey::fetch, "t", 1)) EXPECT_EQ(reqs[i].broker, 2);
}

INSTANTIATE_TEST_SUITE_P(FetchVersions, MockLeaderMove,
                         ::testing::Values(std::int16_t{11}, kwire::protocol::FetchRequest::max_version),
                         [](const auto& info) { return "v" + std::to_string(info.param); });

// -------------------------------------------------- lost connections

TEST(MockClient, DroppedConnectionMidResponseReconnectsWithoutLossOrDuplicates) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 5);
  Fault drop;
  drop.api = ApiKey::fetch;
  drop.drop_connection = true;
  c.inject(drop);
  Consumer cons(props(c, {{"auto.offset.reset", "earliest"}}));
  cons.assign({t0});
  EXPECT_EQ(poll_until(cons, 5), expected("t-0", 0, 5));

  c.append_values("t", 0, 5);
  c.inject(drop);
  EXPECT_EQ(poll_until(cons, 5), expected("t-0", 5, 10));
  // The consumer's next fetch may have been out before the fault was queued
  // (fetches are pipelined): poll on until a later fetch has been dropped and
  // the connection made again; nothing is repeated.
  const auto until = std::chrono::steady_clock::now() + 3s;
  while ((c.pending_faults() > 0 || c.requests(ApiKey::api_versions).size() < 4) &&
         std::chrono::steady_clock::now() < until)
    EXPECT_TRUE(cons.poll(50ms).empty());

  auto reqs = c.requests();
  auto f = indexes(reqs, ApiKey::fetch, "t", 0);
  ASSERT_GE(f.size(), 2u);
  EXPECT_EQ(offset_of(reqs[f[0]], "t", 0), 0);
  EXPECT_EQ(offset_of(reqs[f[1]], "t", 0), 0) << dump(reqs);  // the dropped fetch is repeated
  // Each drop forced a new connection (and a new ApiVersions handshake).
  EXPECT_GE(c.requests(ApiKey::api_versions).size(), 4u) << dump(reqs);
  EXPECT_EQ(c.pending_faults(), 0u);
}

TEST(MockClient, DroppedConnectionDuringListOffsetsIsRetried) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 4);
  KafkaClient client(props(c));
  client.metadata(std::vector<std::string>{"t"});
  Fault drop;
  drop.api = ApiKey::list_offsets;
  drop.drop_connection = true;
  drop.times = 2;
  c.inject(drop);
  auto out = client.list_offsets({{t0, kwire::client::kLatestTimestamp}});
  EXPECT_EQ(out.at(t0).offset, 4);
  EXPECT_EQ(c.requests(ApiKey::list_offsets).size(), 3u);
}

TEST(MockClient, DroppedConnectionsExhaustListOffsetsBudgetWithClearError) {
  MockCluster c;
  c.create_topic("t", 1);
  KafkaClient client(props(c, {{"retries", "1"}, {"retry.backoff.ms", "5"}}));
  client.metadata(std::vector<std::string>{"t"});
  Fault drop;
  drop.api = ApiKey::list_offsets;
  drop.drop_connection = true;
  drop.times = 10;
  c.inject(drop);
  try {
    client.list_offsets({{t0, kwire::client::kLatestTimestamp}});
    FAIL() << "expected KafkaError";
  } catch (const KafkaError& e) {
    EXPECT_EQ(e.code(), static_cast<std::int16_t>(ErrorCode::network_exception));
    EXPECT_NE(std::string(e.what()).find("t-0"), std::string::npos) << e.what();
  }
}

// --------------------------------------------------- truncated batch

TEST(MockClient, TruncatedFinalBatchDeliversCompleteBatchesAndContinuesAtNextOffset) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 6, 2);  // batches [0,1] [2,3] [4,5]
  Fault cut;
  cut.api = ApiKey::fetch;
  cut.topic = "t";
  cut.partition = 0;
  cut.truncate_last_batch = true;
  c.inject(cut);
  Consumer cons(props(c, {{"auto.offset.reset", "earliest"}}));
  cons.assign({t0});
  auto first = cons.poll(2000ms);
  ASSERT_EQ(first.size(), 4u);
  EXPECT_EQ(first[3].offset, 3);
  EXPECT_EQ(poll_until(cons, 2), expected("t-0", 4, 6));
  auto f = c.requests(ApiKey::fetch);
  ASSERT_GE(f.size(), 2u);
  EXPECT_EQ(offset_of(f[0], "t", 0), 0);
  EXPECT_EQ(offset_of(f[1], "t", 0), 4);
}

TEST(MockClient, FetchHonoursPartitionMaxBytes) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 6, 2);
  // Room for about one batch per fetch.
  Consumer cons(props(c, {{"auto.offset.reset", "earliest"}, {"max.partition.fetch.bytes", "100"}}));
  cons.assign({t0});
  EXPECT_EQ(poll_until(cons, 6), expected("t-0", 0, 6));
  auto f = c.requests(ApiKey::fetch);
  ASSERT_GE(f.size(), 3u);
  EXPECT_EQ(offset_of(f[0], "t", 0), 0);
  EXPECT_EQ(offset_of(f[1], "t", 0), 2);
  EXPECT_EQ(offset_of(f[2], "t", 0), 4);
}

// ------------------------------------------------------------ throttle

TEST(MockClient, ThrottleTimeHoldsBackRequestsToThatBroker) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 3);
  Fault slow;
  slow.api = ApiKey::fetch;
  slow.broker = 1;
  slow.throttle_ms = 300;
  c.inject(slow);
  Consumer cons(props(c, {{"auto.offset.reset", "earliest"}}));
  cons.assign({t0});
  auto t_start = std::chrono::steady_clock::now();
  EXPECT_EQ(poll_until(cons, 3), expected("t-0", 0, 3));
  // At least one more fetch (held back by the throttle; poll() returns on its
  // own timeout meanwhile).
  while (c.requests(ApiKey::fetch).size() < 2 && std::chrono::steady_clock::now() - t_start < 3s) cons.poll(100ms);
  auto elapsed = std::chrono::steady_clock::now() - t_start;
  auto reqs = c.requests();
  auto f = indexes(reqs, ApiKey::fetch, "t", 0);
  ASSERT_GE(f.size(), 2u) << dump(reqs);
  // Nothing is sent to broker 1 until the throttle time has passed.
  for (std::size_t i = f[0] + 1; i < reqs.size(); ++i) {
    if (reqs[i].broker != 1) continue;
    EXPECT_GE(ms_between(reqs[f[0]], reqs[i]), 295) << dump(reqs);
    break;
  }
  EXPECT_GE(ms_between(reqs[f[0]], reqs[f[1]]), 295) << dump(reqs);
  EXPECT_LT(elapsed, 3s);
}

// --------------------------------------------------- log start moves

// The consumer sends its next Fetch before it hands out the records of the
// last one. A test that changes the log right after a poll first lets that
// Fetch be answered empty (fetch.max.wait.ms is 20 ms), so the change is met
// by the Fetch after it and not half-seen by the one in flight.
static void let_prefetch_answer_empty() { std::this_thread::sleep_for(300ms); }

TEST(MockClient, LogStartMoveResetsToEarliest) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 5);
  Consumer cons(props(c, {{"auto.offset.reset", "earliest"}}));
  cons.assign({t0});
  cons.seek(t0, 0);
  EXPECT_EQ(poll_until(cons, 5).size(), 5u);
  let_prefetch_answer_empty();
  c.append_values("t", 0, 5);
  c.set_log_start_offset("t", 0, 8);
  EXPECT_EQ(poll_until(cons, 2), expected("t-0", 8, 10));
  bool saw_reset = false;
  for (auto& r : c.requests(ApiKey::list_offsets))
    if (r.partitions.at(0).offset == kwire::client::kEarliestTimestamp) saw_reset = true;
  EXPECT_TRUE(saw_reset);
}

TEST(MockClient, LogStartMoveResetsToLatest) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 5);
  Consumer cons(props(c, {{"auto.offset.reset", "latest"}}));
  cons.assign({t0});
  cons.seek(t0, 0);
  EXPECT_EQ(poll_until(cons, 5).size(), 5u);
  let_prefetch_answer_empty();
  c.append_values("t", 0, 5);
  c.set_log_start_offset("t", 0, 8);
  EXPECT_TRUE(poll_until(cons, 1, 300ms).empty());
  EXPECT_EQ(cons.position(t0), 10);
  c.append_values("t", 0, 2);
  EXPECT_EQ(poll_until(cons, 2), expected("t-0", 10, 12));
}

TEST(MockClient, LogStartMoveWithResetNoneThrowsOffsetOutOfRange) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 5);
  Consumer cons(props(c, {{"auto.offset.reset", "none"}}));
  cons.assign({t0});
  cons.seek(t0, 0);
  EXPECT_EQ(poll_until(cons, 5).size(), 5u);
  let_prefetch_answer_empty();
  c.append_values("t", 0, 5);
  c.set_log_start_offset("t", 0, 8);
  try {
    poll_until(cons, 1, 2000ms);
    FAIL() << "expected OffsetOutOfRangeError";
  } catch (const OffsetOutOfRangeError& e) {
    EXPECT_EQ(e.partition(), t0);
    EXPECT_EQ(e.offset(), 5);
    EXPECT_NE(std::string(e.what()).find("t-0"), std::string::npos);
  }
}

// -------------------------------------------------- topic recreation

TEST(MockClient, TopicRecreatedWithNewIdIsDetected) {
  MockCluster c;
  auto old_id = c.create_topic("t", 1);
  c.append_values("t", 0, 5);
  Consumer cons(props(c, {{"auto.offset.reset", "earliest"}}));
  cons.assign({t0});
  EXPECT_EQ(poll_until(cons, 5).size(), 5u);
  // The whole request log is checked: the next fetch (with the old id) is
  // already in flight when the topic is recreated.
  auto new_id = c.recreate_topic("t", 1);
  ASSERT_NE(old_id, new_id);
  c.append_values("t", 0, 2, 1, "n");
  EXPECT_EQ(poll_until(cons, 2), expected("t-0", 0, 2, "n"));

  auto reqs = c.requests();
  auto f = indexes(reqs, ApiKey::fetch, "t", 0);
  ASSERT_GE(f.size(), 2u) << dump(reqs);
  // The old id is refused (UNKNOWN_TOPIC_ID), metadata brings the new id,
  // and later fetches use it; the old position is out of range in the new
  // topic, so auto.offset.reset applies.
  EXPECT_EQ(reqs[f[0]].topic_ids.at(0), old_id);
  std::size_t first_new = 0;
  while (first_new < f.size() && reqs[f[first_new]].topic_ids.at(0) != new_id) ++first_new;
  ASSERT_LT(first_new, f.size()) << dump(reqs);
  ASSERT_GT(first_new, 0u) << dump(reqs);
  EXPECT_TRUE(metadata_between(reqs, f[first_new - 1], f[first_new]));
  for (std::size_t i = first_new; i < f.size(); ++i) EXPECT_EQ(reqs[f[i]].topic_ids.at(0), new_id);
  ASSERT_NE(cons.client().cached_metadata().topic("t"), nullptr);
  EXPECT_EQ(cons.client().cached_metadata().topic("t")->topic_id, new_id);
}

TEST(MockClient, TopicRecreatedWithResetNoneThrows) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 5);
  Consumer cons(props(c, {{"auto.offset.reset", "none"}}));
  cons.assign({t0});
  cons.seek(t0, 0);
  EXPECT_EQ(poll_until(cons, 5).size(), 5u);
  c.recreate_topic("t", 1);
  c.append_values("t", 0, 2);
  EXPECT_THROW(poll_until(cons, 1, 2000ms), OffsetOutOfRangeError);
}

// ------------------------------------------------------------ timeouts

TEST(MockClient, ListOffsetsRequestTimeoutNamesTheBroker) {
  MockCluster c;
  c.create_topic("t", 1);
  KafkaClient client(props(c, {{"request.timeout.ms", "300"}}));
  client.metadata(std::vector<std::string>{"t"});
  Fault stall;
  stall.api = ApiKey::list_offsets;
  stall.delay = 1500ms;
  c.inject(stall);
  auto t_start = std::chrono::steady_clock::now();
  try {
    client.list_offsets({{t0, kwire::client::kLatestTimestamp}});
    FAIL() << "expected TimeoutError";
  } catch (const TimeoutError& e) {
    EXPECT_NE(std::string(e.what()).find(c.endpoint(1)), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ListOffsets"), std::string::npos) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t_start, 1200ms);
  // The client recovers on a new connection.
  EXPECT_EQ(client.list_offsets({{t0, kwire::client::kLatestTimestamp}}).at(t0).offset, 0);
}

TEST(MockClient, FetchRequestTimeoutIsADisconnectAndTheFetchIsRetried) {
  // As Java's consumer: a Fetch with no answer within request.timeout.ms
  // closes the connection and the partitions are fetched again; poll does
  // not fail.
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 2);
  Consumer cons(props(c, {{"request.timeout.ms", "300"}}));
  cons.assign({t0});
  cons.seek(t0, 0);
  Fault stall;
  stall.api = ApiKey::fetch;
  stall.delay = 1500ms;
  c.inject(stall);
  const auto before = c.requests(ApiKey::fetch).size();
  std::vector<Got> got;
  const auto t_start = std::chrono::steady_clock::now();
  while (got.size() < 2 && std::chrono::steady_clock::now() - t_start < 5000ms) {
    ASSERT_NO_THROW(take(cons.poll(100ms), got));
  }
  EXPECT_EQ(got, expected("t-0", 0, 2));
  // The stalled Fetch, then at least one more on a new connection.
  EXPECT_GE(c.requests(ApiKey::fetch).size(), before + 2);
  // Not before the stalled Fetch timed out (request.timeout.ms past the
  // broker's fetch.max.wait.ms).
  EXPECT_GE(std::chrono::steady_clock::now() - t_start, 300ms);
}

// ------------------------------------------------ produce and admin

TEST(MockClient, ProduceRetriesNotLeaderAndAdminCallsWork) {
  MockCluster c(2);
  KafkaClient admin(props(c));
  admin.create_topics({{"p", 2, 1, {}}});
  ASSERT_TRUE(c.has_topic("p"));
  EXPECT_THROW(admin.create_topics({{"p", 2, 1, {}}}), KafkaError);
  admin.create_topics({{"p", 2, 1, {}}}, true);

  c.fail_next(ApiKey::produce, "p", 0, ErrorCode::not_leader_or_follower, 1);
  Producer prod(props(c));
  for (int i = 0; i < 4; ++i) {
    ProducerMessage m;
    m.topic = "p";
    m.partition = 0;
    std::string v = "m" + std::to_string(i);
    m.value = kwire::protocol::Bytes(v.begin(), v.end());
    prod.send(std::move(m));
  }
  prod.flush();
  EXPECT_EQ(prod.records_sent(), 4u);
  EXPECT_EQ(c.high_watermark("p", 0), 4);
  auto produces = c.requests(ApiKey::produce);
  ASSERT_EQ(produces.size(), 2u);
  EXPECT_EQ(produces[1].broker, c.leader("p", 0));

  Consumer cons(props(c, {{"auto.offset.reset", "earliest"}}));
  cons.assign({{"p", 0}});
  EXPECT_EQ(poll_until(cons, 4), expected("p-0", 0, 4, "m"));

  admin.delete_topics({"p"});
  EXPECT_FALSE(c.has_topic("p"));
}

TEST(MockClient, OffsetsForTimes) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append("t", 0, {{std::nullopt, "a", 1000}, {std::nullopt, "b", 2000}});
  c.append("t", 0, {{std::nullopt, "c", 3000}});
  Consumer cons(props(c));
  auto r = cons.offsets_for_times({{t0, 1500}});
  ASSERT_TRUE(r.at(t0).has_value());
  EXPECT_EQ(r.at(t0)->offset, 1);
  EXPECT_EQ(r.at(t0)->timestamp, 2000);
  EXPECT_EQ(cons.offsets_for_times({{t0, 2500}}).at(t0)->offset, 2);
  EXPECT_FALSE(cons.offsets_for_times({{t0, 5000}}).at(t0).has_value());
  EXPECT_EQ(cons.beginning_offsets({t0}).at(t0), 0);
  EXPECT_EQ(cons.end_offsets({t0}).at(t0), 3);
}

TEST(MockClient, LeaderBrokerDownThenLeadershipMovesFetchRecovers) {
  MockCluster c(2);
  c.create_topic("t", 1, {1});
  c.append_values("t", 0, 3);
  Consumer cons(props(c, {{"auto.offset.reset", "earliest"}}));
  cons.assign({t0});
  EXPECT_EQ(poll_until(cons, 3), expected("t-0", 0, 3));
  c.set_broker_down(1, true);
  c.move_leader("t", 0, 2);
  c.append_values("t", 0, 3);
  c.clear_requests();
  // The lost connection to the old leader must lead to a metadata refresh,
  // not to endless reconnects to the dead broker.
  EXPECT_EQ(poll_until(cons, 3, 3000ms), expected("t-0", 3, 6));
  auto f = c.requests(ApiKey::fetch);
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f.back().broker, 2);
  EXPECT_EQ(offset_of(f.front(), "t", 0), 3);
}
