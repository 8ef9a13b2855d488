// The streaming source against the in-process mock cluster: data loss by a
// log-start move (failOnDataLoss true / false), topic recreation, partitions
// appearing under `subscribe`, exactly-once rows across leader moves,
// lost connections and truncated batches, Trigger.Once after a crash, and
// the progress of a replayed batch.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <span>
#include <string>
#include <thread>
#include <vector>

#include "../temp_dir.hpp"
#include "kwire/mock/mock_cluster.hpp"
#include "kwire/source/planning.hpp"
#include "kwire/source/stream.hpp"
#include "mock_source_support.hpp"

using namespace std::chrono_literals;
using kwire::mock::Fault;
using kwire::mock::MockCluster;
using kwire::protocol::ApiKey;
using kwire::protocol::ErrorCode;
using kwire::source::BatchProgress;
using kwire::source::DataLossError;
using kwire::source::DataLossKind;
using kwire::source::Row;
using kwire::source::StreamingQuery;
using kwire::source::Trigger;

namespace fs = std::filesystem;

namespace {

using kwire_test::TempDir;
using namespace kwire_test;

std::vector<std::string> sorted(std::vector<std::string> v) {
  std::sort(v.begin(), v.end());
  return v;
}

}  // namespace

TEST(MockSource, LogStartMoveWithFailOnDataLossRaises) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 5);
  TempDir dir;
  BatchSink sink;
  StreamingQuery q(source_options(c, {{"failOnDataLoss", "true"}}), dir.path(), sink, every_call());
  auto b0 = q.run_once_batch();
  ASSERT_TRUE(b0.has_value());
  EXPECT_EQ(sink.rows, rows_of("t-0", 0, 5));
  c.append_values("t", 0, 5);
  c.set_log_start_offset("t", 0, 8);
  try {
    q.run_once_batch();
    FAIL() << "expected DataLossError";
  } catch (const DataLossError& e) {
    EXPECT_EQ(e.topic(), "t");
    EXPECT_EQ(e.partition(), 0);
    EXPECT_EQ(e.start_offset(), 5);
  }
  EXPECT_EQ(sink.rows.size(), 5u);
}

TEST(MockSource, LogStartMoveWithoutFailOnDataLossSkipsTheLostRange) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 5);
  TempDir dir;
  BatchSink sink;
  StreamingQuery q(source_options(c, {{"failOnDataLoss", "false"}}), dir.path(), sink, every_call());
  ASSERT_TRUE(q.run_once_batch().has_value());
  c.append_values("t", 0, 5);
  c.set_log_start_offset("t", 0, 8);
  auto b1 = q.run_once_batch();
  ASSERT_TRUE(b1.has_value());
  auto want = rows_of("t-0", 0, 5);
  auto tail = rows_of("t-0", 8, 10);
  want.insert(want.end(), tail.begin(), tail.end());
  EXPECT_EQ(sink.rows, want);
  // As in Spark, the out-of-range skip counts one dataLoss event too.
  EXPECT_EQ(b1->offset_out_of_range, 3);
  EXPECT_EQ(b1->data_loss, 1);
  EXPECT_EQ(b1->num_input_rows, 2);
  EXPECT_NE(b1->to_json("d").find("\"dataLoss\":\"1\",\"offsetOutOfRange\":\"3\""), std::string::npos)
      << b1->to_json("d");
  EXPECT_FALSE(q.run_once_batch().has_value());

  // The whole next range aged out: skipped in full, again one dataLoss event.
  c.append_values("t", 0, 3);
  c.set_log_start_offset("t", 0, 13);
  auto b2 = q.run_once_batch();
  ASSERT_TRUE(b2.has_value());
  EXPECT_EQ(b2->num_input_rows, 0);
  EXPECT_EQ(b2->offset_out_of_range, 3);
  EXPECT_EQ(b2->data_loss, 1);
  EXPECT_EQ(sink.rows, want);
}

TEST(MockSource, TopicRecreatedIsReportedAsDataLoss) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 5);
  TempDir dir;
  BatchSink sink;
  StreamingQuery q(source_options(c, {{"failOnDataLoss", "true"}, {"fetchOffset.numRetries", "2"}}), dir.path(), sink,
                   every_call());
  ASSERT_TRUE(q.run_once_batch().has_value());
  c.recreate_topic("t", 1);
  c.append_values("t", 0, 2);
  try {
    q.run_once_batch();
    FAIL() << "expected DataLossError";
  } catch (const DataLossError& e) {
    EXPECT_EQ(e.kind(), DataLossKind::partition_offset_changed) << e.what();
    EXPECT_EQ(e.topic(), "t");
    EXPECT_EQ(e.start_offset(), 5);
    EXPECT_EQ(e.end_offset(), 2);
  }
}

TEST(MockSource, PartitionsAppearingArePickedUpWithSubscribe) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 3);
  TempDir dir;
  BatchSink sink;
  StreamingQuery q(source_options(c), dir.path(), sink, every_call());
  ASSERT_TRUE(q.run_once_batch().has_value());
  EXPECT_EQ(sink.rows, rows_of("t-0", 0, 3));
  c.add_partitions("t", 3);
  c.append_values("t", 1, 2);
  c.append_values("t", 2, 1);
  c.append_values("t", 0, 1);
  auto b1 = q.run_once_batch();
  ASSERT_TRUE(b1.has_value());
  std::vector<std::string> want = rows_of("t-0", 0, 4);
  for (auto& r : rows_of("t-1", 0, 2)) want.push_back(r);
  for (auto& r : rows_of("t-2", 0, 1)) want.push_back(r);
  EXPECT_EQ(sorted(sink.rows), sorted(want));
  EXPECT_EQ(b1->end_offsets.at("t").size(), 3u);
  EXPECT_EQ(b1->end_offsets.at("t").at(1), 2);
}

TEST(MockSource, ExactlyOnceRowsAcrossLeaderMoveDropsAndTruncation) {
  MockCluster c(2);
  c.create_topic("t", 2, {1, 2});
  c.append_values("t", 0, 3, 2);
  c.append_values("t", 1, 3, 3);
  TempDir dir;
  BatchSink sink;
  StreamingQuery q(source_options(c, {{"maxOffsetsPerTrigger", "6"}}), dir.path(), sink, every_call());
  ASSERT_TRUE(q.run_once_batch().has_value());  // 3 + 3 rows
  // The next rows arrive after the faults, so the next batch must fetch them
  // (what a batch fetched past its end would be used without a fetch). The
  // prefetch at the log end, sent before the faults, is answered empty first
  // (fetch.max.wait.ms 20).
  std::this_thread::sleep_for(200ms);
  c.append_values("t", 0, 3, 2);
  c.append_values("t", 1, 3, 3);

  c.move_leader("t", 0, 2);
  c.fail_next(ApiKey::fetch, "t", 1, ErrorCode::fenced_leader_epoch, 1);
  Fault drop;
  drop.api = ApiKey::fetch;
  drop.broker = 2;
  drop.drop_connection = true;
  c.inject(drop);
  Fault cut;
  cut.api = ApiKey::fetch;
  cut.topic = "t";
  cut.partition = 0;
  cut.truncate_last_batch = true;
  c.inject(cut);
  int batches = 1;
  while (batches < 10 && q.run_once_batch().has_value()) ++batches;
  EXPECT_EQ(batches, 2);  // the other 6 rows in one more trigger, then nothing new
  auto want = rows_of("t-0", 0, 6);
  for (auto& r : rows_of("t-1", 0, 6)) want.push_back(r);
  EXPECT_EQ(sorted(sink.rows), sorted(want));
  EXPECT_EQ(sink.rows.size(), 12u);
  EXPECT_EQ(c.pending_faults(), 0u);
  // After the move, t-0 is read from broker 2 only.
  auto fetches = c.requests(ApiKey::fetch);
  bool moved = false;
  for (auto& f : fetches) {
    if (!f.mentions("t", 0)) continue;
    if (f.broker == 2) moved = true;
    if (moved) {
      EXPECT_EQ(f.broker, 2);
    }
  }
  EXPECT_TRUE(moved);
}

// A log truncated below what a query read (an unclean leader election between
// two batches) is Spark's PARTITION_OFFSET_CHANGED: the query's consumer
// keeps the leader epoch of the last record read and checks it with
// OffsetForLeaderEpoch against the new leader.
TEST(MockSource, LogTruncatedBelowWhatWasReadIsDataLoss) {
  for (const std::string fail : {"true", "false"}) {
    SCOPED_TRACE("failOnDataLoss=" + fail);
    MockCluster c(2);
    c.create_topic("t", 1, {1});
    c.append_values("t", 0, 10, 5);
    TempDir dir;
    BatchSink sink;
    StreamingQuery q(source_options(c, {{"failOnDataLoss", fail}}), dir.path(), sink, every_call());
    ASSERT_TRUE(q.run_once_batch().has_value());
    EXPECT_EQ(sink.rows, rows_of("t-0", 0, 10));
    c.move_leader("t", 0, 2);
    c.truncate_log("t", 0, 5);
    c.append_values("t", 0, 8, 4, "w");  // 5-12 under the new epoch
    if (fail == "true") {
      try {
        q.run_once_batch();
        FAIL() << "expected DataLossError";
      } catch (const DataLossError& e) {
        EXPECT_EQ(e.kind(), DataLossKind::partition_offset_changed);
        EXPECT_EQ(e.partition(), 0);
        EXPECT_EQ(e.start_offset(), 10);
        EXPECT_EQ(e.end_offset(), 5);
      }
      EXPECT_EQ(sink.rows.size(), 10u);
    } else {
      auto b1 = q.run_once_batch();
      ASSERT_TRUE(b1.has_value());
      EXPECT_EQ(b1->data_loss, 1);
      ASSERT_FALSE(b1->warnings.empty());
      EXPECT_NE(b1->warnings.front().find("PARTITION_OFFSET_CHANGED"), std::string::npos) << b1->warnings.front();
      auto want = rows_of("t-0", 0, 10);
      auto tail = rows_of("t-0", 10, 13, "w");
      want.insert(want.end(), tail.begin(), tail.end());
      EXPECT_EQ(sink.rows, want);
    }
  }
}

// A crash after offsets/0 was logged but before commits/0: Trigger.Once
// replays batch 0 with its logged range and stops there, as Spark's single
// batch executor does; the next Once run reads what arrived since.
TEST(MockSource, TriggerOnceAfterACrashOnlyReplaysTheLoggedBatch) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 5);
  TempDir dir;
  BatchSink sink;
  {
    StreamingQuery q(source_options(c), dir.path(), sink, every_call());
    ASSERT_TRUE(q.run_once_batch().has_value());
  }
  ASSERT_TRUE(fs::remove(dir.path() / "commits" / "0"));
  c.append_values("t", 0, 3);
  Trigger once;
  once.kind = Trigger::Kind::once;
  std::vector<BatchProgress> seen;
  {
    StreamingQuery q(source_options(c), dir.path(), sink, once);
    q.run([&](const BatchProgress& p) { seen.push_back(p); });
  }
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].batch_id, 0);
  EXPECT_TRUE(seen[0].replayed);
  EXPECT_EQ(seen[0].end_offsets, (kwire::checkpoint::PartitionOffsets{{"t", {{0, 5}}}}));
  EXPECT_EQ(sink.batches[0], rows_of("t-0", 0, 5));
  EXPECT_TRUE(fs::exists(dir.path() / "commits" / "0"));
  EXPECT_FALSE(fs::exists(dir.path() / "offsets" / "1"));

  seen.clear();
  {
    StreamingQuery q(source_options(c), dir.path(), sink, once);
    q.run([&](const BatchProgress& p) { seen.push_back(p); });
  }
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].batch_id, 1);
  EXPECT_FALSE(seen[0].replayed);
  EXPECT_EQ(sink.batches[1], rows_of("t-0", 5, 8));
}

// A batch replayed after a restart lists nothing: as in Spark, its progress
// has no offsets-behind-latest metrics and a null latestOffset; the next
// batch lists again and reports them.
TEST(MockSource, ReplayedBatchReportsNoLagAndNullLatestOffset) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 5);
  TempDir dir;
  BatchSink sink;
  {
    StreamingQuery q(source_options(c), dir.path(), sink, every_call());
    ASSERT_TRUE(q.run_once_batch().has_value());
    c.append_values("t", 0, 5);
    auto b1 = q.run_once_batch();
    ASSERT_TRUE(b1.has_value());
    ASSERT_TRUE(b1->lag.has_value());
    EXPECT_NE(b1->to_json("d").find("\"latestOffset\":{\"t\":{\"0\":10}}"), std::string::npos) << b1->to_json("d");
  }
  ASSERT_TRUE(fs::remove(dir.path() / "commits" / "1"));
  c.append_values("t", 0, 2);
  StreamingQuery q(source_options(c), dir.path(), sink, every_call());
  auto replay = q.run_once_batch();
  ASSERT_TRUE(replay.has_value());
  EXPECT_EQ(replay->batch_id, 1);
  EXPECT_TRUE(replay->replayed);
  EXPECT_EQ(replay->num_input_rows, 5);
  EXPECT_FALSE(replay->lag.has_value());
  EXPECT_TRUE(replay->latest_offsets.empty());
  EXPECT_FALSE(replay->estimated_total_bytes_behind_latest.has_value());
  const auto json = replay->to_json("d");
  EXPECT_NE(json.find("\"endOffset\":{\"t\":{\"0\":10}},\"latestOffset\":null,"), std::string::npos) << json;
  EXPECT_NE(json.find("\"metrics\":{\"dataLoss\":\"0\",\"offsetOutOfRange\":\"0\"}"), std::string::npos) << json;
  EXPECT_EQ(json.find("OffsetsBehindLatest"), std::string::npos) << json;
  EXPECT_NE(replay->to_line().find("offsets behind latest: -"), std::string::npos) << replay->to_line();
  EXPECT_EQ(replay->to_prometheus().find("kwire_source_offsets_behind_latest"), std::string::npos);
  EXPECT_NE(replay->plan_json().find("\"latestOffset\":null"), std::string::npos) << replay->plan_json();

  auto next = q.run_once_batch();
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ(next->batch_id, 2);
  ASSERT_TRUE(next->lag.has_value());
  EXPECT_EQ(next->lag->max_offsets_behind_latest, 0);
  EXPECT_NE(next->to_json("d").find("\"latestOffset\":{\"t\":{\"0\":12}}"), std::string::npos) << next->to_json("d");
  EXPECT_NE(next->to_json("d").find("\"minOffsetsBehindLatest\":\"0\""), std::string::npos);
}
