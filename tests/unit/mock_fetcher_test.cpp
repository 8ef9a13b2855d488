// The Fetcher's per-partition rules against the in-process mock cluster
// (real Fetch requests and answers over loopback): a corrupt batch in one
// partition with valid data in another in the same answer, a partition
// listed twice, and fencing by leader epoch.
#include <gtest/gtest.h>

#include <chrono>
#include <string>
#include <vector>

#include "kwire/client/consumer.hpp"
#include "kwire/mock/mock_cluster.hpp"
#include "kwire/protocol/messages.hpp"
#include "mock_consumer_support.hpp"

using namespace std::chrono_literals;
using kwire::client::Consumer;
using kwire::client::CorruptBatchError;
using kwire::client::TopicPartition;
using kwire::mock::Fault;
using kwire::mock::MockCluster;
using kwire::protocol::ApiKey;
using kwire::protocol::CorruptionKind;
using kwire::protocol::ErrorCode;
using namespace kwire::mock_support;

namespace {
const TopicPartition t0{"t", 0};
const TopicPartition t1{"t", 1};
}  // namespace

TEST(MockFetcher, CorruptBatchInOnePartitionDeliversItsValidRecordsAndTheOtherPartition) {
  MockCluster c;
  c.create_topic("t", 2, {1, 1});  // one leader: both partitions in one answer
  c.append_values("t", 0, 10, 5);  // batches 0-4 and 5-9
  c.append_values("t", 1, 6, 3);
  Fault bad;
  bad.api = ApiKey::fetch;
  bad.topic = "t";
  bad.partition = 0;
  bad.corrupt_last_batch = true;  // t-0's 5-9 arrives with a bad CRC, once
  c.inject(bad);
  Consumer cons(props(c, {{"auto.offset.reset", "none"}}));
  cons.assign({t0, t1});
  cons.seek(t0, 0);
  cons.seek(t1, 0);
  std::vector<Got> got;
  take(cons.poll(2000ms), got);
  auto want = expected("t-0", 0, 5);
  auto w1 = expected("t-1", 0, 6);
  want.insert(want.end(), w1.begin(), w1.end());
  EXPECT_EQ(sorted(got), sorted(want));
  try {
    cons.poll(2000ms);
    FAIL() << "no error for the corrupt batch";
  } catch (const CorruptBatchError& e) {
    EXPECT_EQ(e.partition(), t0);
    EXPECT_EQ(e.base_offset(), 5);
    EXPECT_EQ(e.kind(), CorruptionKind::crc_mismatch);
    const std::string what = e.what();
    EXPECT_EQ(what.find("corrupt record batch"), what.rfind("corrupt record batch")) << what;
  }
  EXPECT_EQ(cons.position(t0), 5);
  EXPECT_EQ(cons.position(t1), 6);
  // The next fetch of t-0 (from 5) is clean: nothing was skipped.
  c.append_values("t", 1, 2, 2);
  auto rest = poll_until(cons, 7);
  auto want_rest = expected("t-0", 5, 10);
  auto w1b = expected("t-1", 6, 8);
  want_rest.insert(want_rest.end(), w1b.begin(), w1b.end());
  EXPECT_EQ(sorted(rest), sorted(want_rest));
}

TEST(MockFetcher, PartitionListedTwiceInAnAnswerIsDeliveredOnce) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 8, 4);
  Fault twice;
  twice.api = ApiKey::fetch;
  twice.topic = "t";
  twice.partition = 0;
  twice.duplicate_partition = true;
  twice.times = 3;
  c.inject(twice);
  Consumer cons(props(c, {{"auto.offset.reset", "earliest"}}));
  cons.assign({t0});
  auto got = poll_until(cons, 8);
  EXPECT_EQ(got, expected("t-0", 0, 8));
  EXPECT_TRUE(poll_until(cons, 1, 300ms).empty());
  EXPECT_EQ(cons.position(t0), 8);
}

TEST(MockFetcher, FencedLeaderEpochRefreshesMetadataAndContinuesWithoutLossOrRepeats) {
  MockCluster c(2);
  c.create_topic("t", 1, {1});
  c.append_values("t", 0, 5, 5);
  Consumer cons(props(c, {{"auto.offset.reset", "earliest"}}));
  cons.assign({t0});
  auto got = poll_until(cons, 5);
  ASSERT_EQ(got, expected("t-0", 0, 5));
  const auto old_epoch = c.leader_epoch("t", 0);
  // A new epoch on the same leader: the consumer's next Fetch names the old
  // one and is fenced; then leadership moves to broker 2 as well.
  c.bump_leader_epoch("t", 0);
  c.append_values("t", 0, 5, 5);
  auto more = poll_until(cons, 5);
  EXPECT_EQ(more, expected("t-0", 5, 10));
  c.move_leader("t", 0, 2);
  c.append_values("t", 0, 5, 5);
  auto last = poll_until(cons, 5);
  EXPECT_EQ(last, expected("t-0", 10, 15));
  bool sent_old = false, sent_new = false, to_new_leader = false;
  for (auto& r : c.requests(ApiKey::fetch)) {
    for (std::size_t i = 0; i < r.partitions.size(); ++i) {
      if (r.current_leader_epochs.at(i) == old_epoch) sent_old = true;
      if (r.current_leader_epochs.at(i) == old_epoch + 1) sent_new = true;
      if (r.broker == 2 && r.current_leader_epochs.at(i) == old_epoch + 2) to_new_leader = true;
    }
  }
  EXPECT_TRUE(sent_old && sent_new && to_new_leader) << dump(c.requests(ApiKey::fetch));
}

TEST(MockFetcher, DivergenceFoundByOffsetForLeaderEpochAfterALeaderChange) {
  for (const std::string reset : {"none", "earliest"}) {
    SCOPED_TRACE(reset);
    MockCluster c(2);
    c.create_topic("t", 1, {1});
    c.append_values("t", 0, 10, 5);  // 0-9 under epoch 0
    Consumer cons(props(c, {{"auto.offset.reset", reset}}));
    cons.assign({t0});
    cons.seek(t0, 0);
    ASSERT_EQ(poll_until(cons, 10), expected("t-0", 0, 10));
    // An unclean election: broker 2 leads with a log that has epoch 0 only up
    // to offset 4, and new records of epoch 1 after it.
    c.move_leader("t", 0, 2);
    c.truncate_log("t", 0, 5);
    c.append_values("t", 0, 3, 3, "w");  // 5-7 under epoch 1
    if (reset == "none") {
      try {
        for (int i = 0; i < 20; ++i) cons.poll(200ms);
        FAIL() << "no truncation reported" << dump(c.requests());
      } catch (const kwire::client::LogTruncationError& e) {
        EXPECT_EQ(e.partition(), t0);
        EXPECT_EQ(e.offset(), 10);
        EXPECT_EQ(e.divergent_offset(), 5);
      }
      EXPECT_EQ(cons.position(t0), 10);
    } else {
      // The position moves back to the divergent offset; the new records follow.
      EXPECT_EQ(poll_until(cons, 3), expected("t-0", 5, 8, "w"));
    }
    auto asked = c.requests(ApiKey::offset_for_leader_epoch);
    ASSERT_FALSE(asked.empty()) << dump(c.requests());
    EXPECT_EQ(asked.front().broker, 2);
    EXPECT_EQ(asked.front().partitions.at(0).offset, 0);  // the epoch of the last record consumed
    EXPECT_EQ(asked.front().current_leader_epochs.at(0), 1);
  }
}

// set_position_limit: records at or past the limit are kept, not handed out;
// raising the limit hands them out without fetching them again, and a limit
// removed lets the partition run on.
TEST(MockFetcher, PositionLimitKeepsWhatWasFetchedPastIt) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 10, 10);  // one batch
  Consumer cons(props(c, {{"auto.offset.reset", "none"}, {"fetch.max.wait.ms", "20"}}));
  cons.assign({t0});
  cons.seek(t0, 0);
  cons.set_position_limit(t0, 3);
  auto first = poll_until(cons, 3);
  EXPECT_EQ(first, expected("t-0", 0, 3));
  std::vector<Got> more;
  take(cons.poll(200ms), more);
  EXPECT_TRUE(more.empty());
  EXPECT_EQ(cons.position(t0), 3);
  auto fetches_from = [&](std::int64_t offset) {
    int n = 0;
    for (auto& r : c.requests(ApiKey::fetch))
      for (auto& p : r.partitions)
        if (p.topic == "t" && p.offset == offset) ++n;
    return n;
  };
  cons.set_position_limit(t0, 7);
  EXPECT_EQ(poll_until(cons, 4), expected("t-0", 3, 7));
  EXPECT_EQ(cons.position(t0), 7);
  cons.set_position_limit(t0, std::nullopt);
  c.append_values("t", 0, 2, 2);
  EXPECT_EQ(poll_until(cons, 5), expected("t-0", 7, 12));
  EXPECT_EQ(fetches_from(3), 0);
  EXPECT_EQ(fetches_from(7), 0);
  EXPECT_THROW(cons.set_position_limit({"t", 5}, 1), kwire::client::ClientError);
}
