// Pipelined fetching against the in-process mock cluster: the consumer sends a
// leader its next Fetch as soon as the previous answer arrived, before the
// records are handed out. A seek, a pause or an OFFSET_OUT_OF_RANGE answer
// while that Fetch is in flight must neither lose nor repeat records.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <map>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include "kwire/client/consumer.hpp"
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

// One 5-record batch (111 bytes) per partition and fetch.
Props prefetch_props(const MockCluster& c, const Props& extra) {
  Props p = extra;
  p.emplace("max.partition.fetch.bytes", "150");
  return props(c, p);
}

// Whether a Fetch asked for topic-partition at `offset` (waiting up to 2 s for
// the mock to have received it).
bool fetched_at(const MockCluster& c, const std::string& topic, std::int32_t partition, std::int64_t offset) {
  auto deadline = std::chrono::steady_clock::now() + 2s;
  do {
    for (auto& r : c.requests(ApiKey::fetch))
      for (auto& p : r.partitions)
        if (p.topic == topic && p.partition == partition && p.offset == offset) return true;
    std::this_thread::sleep_for(5ms);
  } while (std::chrono::steady_clock::now() < deadline);
  return false;
}

const TopicPartition t0{"t", 0};
const TopicPartition t1{"t", 1};

}  // namespace

TEST(MockPrefetch, NextFetchStartsAfterTheRecordsJustReceived) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 20, 5);  // batches [0-4] [5-9] [10-14] [15-19]
  Consumer cons(prefetch_props(c, {{"auto.offset.reset", "earliest"}, {"max.poll.records", "2"}}));
  cons.assign({t0});
  auto first = cons.poll(2000ms);
  ASSERT_EQ(first.size(), 2u);
  // Only two records were handed out, yet the fetch for the next batch is out.
  EXPECT_TRUE(fetched_at(c, "t", 0, 5)) << dump(c.requests());
  EXPECT_EQ(cons.position(t0), 2);
  std::vector<Got> got;
  take(first, got);
  auto rest = poll_until(cons, 18);
  got.insert(got.end(), rest.begin(), rest.end());
  EXPECT_EQ(got, expected("t-0", 0, 20));
}

TEST(MockPrefetch, SeekWhileAFetchIsInFlightReturnsRecordsFromTheNewPositionOnly) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 20, 5);
  Consumer cons(prefetch_props(c, {{"auto.offset.reset", "earliest"}, {"max.poll.records", "2"}}));
  cons.assign({t0});
  ASSERT_EQ(cons.poll(2000ms).size(), 2u);
  ASSERT_TRUE(fetched_at(c, "t", 0, 5)) << dump(c.requests());  // in flight: records 5-9
  cons.seek(t0, 12);
  EXPECT_EQ(poll_until(cons, 8), expected("t-0", 12, 20));
  EXPECT_EQ(cons.position(t0), 20);
  // Seeking back re-reads from there, once.
  cons.seek(t0, 3);
  EXPECT_EQ(poll_until(cons, 17), expected("t-0", 3, 20));
}

TEST(MockPrefetch, PauseWhileAFetchIsInFlightDropsNothing) {
  MockCluster c;
  c.create_topic("t", 2);
  c.append_values("t", 0, 10, 5);
  c.append_values("t", 1, 10, 5);
  Consumer cons(prefetch_props(c, {{"auto.offset.reset", "earliest"}, {"max.poll.records", "2"}}));
  cons.assign({t0, t1});
  std::vector<Got> got;
  take(cons.poll(2000ms), got);
  ASSERT_EQ(got.size(), 2u);
  // The next fetch (both partitions from offset 5) is out; pause t-1 now.
  ASSERT_TRUE(fetched_at(c, "t", 1, 5)) << dump(c.requests());
  cons.pause({t1});
  // As in Java's consumer, nothing of a paused partition is returned, neither
  // what was received before the pause (t-1's 0-4) nor the fetch in flight
  // (5-9); its position stays where it was.
  auto more = poll_until(cons, 8);
  got.insert(got.end(), more.begin(), more.end());
  EXPECT_EQ(sorted(got), sorted(expected("t-0", 0, 10)));
  EXPECT_TRUE(poll_until(cons, 1, 300ms).empty());
  EXPECT_EQ(cons.position(t1), 0);
  // After resume() the records held are returned first, then the rest is fetched.
  cons.resume({t1});
  EXPECT_EQ(poll_until(cons, 10), expected("t-1", 0, 10));
}

TEST(MockPrefetch, OffsetOutOfRangeForAFetchInFlightThrowsAfterTheRecordsBeforeIt) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 10, 5);
  // The first fetch is answered normally; the next one (sent before the first
  // answer's records are handed out) gets OFFSET_OUT_OF_RANGE.
  Fault pass;
  pass.api = ApiKey::fetch;
  pass.topic = "t";
  pass.partition = 0;
  c.inject(pass);
  Fault oor = pass;
  oor.error_code = static_cast<std::int16_t>(ErrorCode::offset_out_of_range);
  c.inject(oor);
  Consumer cons(prefetch_props(c, {{"auto.offset.reset", "none"}, {"max.poll.records", "2"}}));
  cons.assign({t0});
  cons.seek(t0, 0);
  std::vector<Got> got;
  try {
    auto deadline = std::chrono::steady_clock::now() + 5s;
    while (std::chrono::steady_clock::now() < deadline) take(cons.poll(100ms), got);
    FAIL() << "expected OffsetOutOfRangeError";
  } catch (const OffsetOutOfRangeError& e) {
    EXPECT_EQ(e.partition(), t0);
    EXPECT_EQ(e.offset(), 5);
  }
  // Every record before the refused offset was returned, none after it.
  EXPECT_EQ(got, expected("t-0", 0, 5));
  EXPECT_EQ(cons.position(t0), 5);
  // Seeking on resumes cleanly.
  cons.seek(t0, 7);
  EXPECT_EQ(poll_until(cons, 3), expected("t-0", 7, 10));
}
