// The streaming source's batch numbering, planning-time data loss and
// AvailableNow lag against the in-process mock cluster, each as Spark 4.2's
// micro-batch execution behaves: an empty batch 0 for a new query, offsets/N
// logged before a planning failure, and lag against the prefetched end.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "../temp_dir.hpp"
#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/mock/mock_cluster.hpp"
#include "kwire/source/stream.hpp"
#include "mock_source_support.hpp"

using kwire::checkpoint::Checkpoint;
using kwire::checkpoint::PartitionOffsets;
using kwire::mock::MockCluster;
using kwire::source::BatchProgress;
using kwire::source::StreamingQuery;
using kwire::source::Trigger;
using kwire_test::TempDir;
using namespace kwire_test;

namespace fs = std::filesystem;

TEST(MockStreamParity, NewQueryAtLatestRunsAnEmptyBatchZero) {
  MockCluster c;
  c.create_topic("t", 2);
  c.append_values("t", 0, 5);
  TempDir dir;
  BatchSink sink;
  StreamingQuery q(source_options(c, {{"startingOffsets", "latest"}}), dir.path(), sink, every_call());
  auto b0 = q.run_once_batch();
  ASSERT_TRUE(b0.has_value());
  EXPECT_EQ(b0->batch_id, 0);
  EXPECT_EQ(b0->num_input_rows, 0);
  EXPECT_TRUE(b0->ranges.empty());
  const PartitionOffsets at{{"t", {{0, 5}, {1, 0}}}};
  EXPECT_EQ(b0->start_offsets, at);
  EXPECT_EQ(b0->end_offsets, at);
  ASSERT_TRUE(b0->lag.has_value());
  EXPECT_EQ(b0->lag->max_offsets_behind_latest, 0);
  {
    auto ck = Checkpoint::open_read_only(dir.path());
    EXPECT_EQ(ck.read_offsets(0), at);
    EXPECT_TRUE(ck.has_commit(0));
  }
  // Nothing new after batch 0: no batch.
  EXPECT_FALSE(q.run_once_batch().has_value());
  c.append_values("t", 1, 3);
  auto b1 = q.run_once_batch();
  ASSERT_TRUE(b1.has_value());
  EXPECT_EQ(b1->batch_id, 1);
  EXPECT_EQ(sink.rows, rows_of("t-1", 0, 3));
}

TEST(MockStreamParity, EarliestOnAnEmptyTopicRunsAnEmptyBatchZeroAndOnceStops) {
  MockCluster c;
  c.create_topic("t", 1);
  TempDir dir;
  BatchSink sink;
  std::vector<BatchProgress> seen;
  {
    StreamingQuery q(source_options(c), dir.path(), sink, Trigger::parse("once"));
    q.run([&](const BatchProgress& p) { seen.push_back(p); });
  }
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].batch_id, 0);
  EXPECT_EQ(seen[0].num_input_rows, 0);
  EXPECT_EQ(seen[0].end_offsets, (PartitionOffsets{{"t", {{0, 0}}}}));
  // A restart with nothing new runs no batch; new records are batch 1.
  StreamingQuery again(source_options(c), dir.path(), sink, every_call());
  EXPECT_FALSE(again.run_once_batch().has_value());
  c.append_values("t", 0, 2);
  auto b1 = again.run_once_batch();
  ASSERT_TRUE(b1.has_value());
  EXPECT_EQ(b1->batch_id, 1);
  EXPECT_EQ(sink.rows, rows_of("t-0", 0, 2));
}

// Data loss found while planning (here the topic recreated with fewer
// records, PARTITION_OFFSET_CHANGED) with failOnDataLoss=true: offsets/1 is
// logged first, then the query fails; a restart replays exactly that range.
TEST(MockStreamParity, PlanningDataLossLogsTheBatchBeforeFailing) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 10);
  TempDir dir;
  BatchSink sink;
  {
    StreamingQuery q(source_options(c, {{"failOnDataLoss", "true"}}), dir.path(), sink, every_call());
    ASSERT_TRUE(q.run_once_batch().has_value());
    c.recreate_topic("t", 1);
    c.append_values("t", 0, 4);
    try {
      q.run_once_batch();
      FAIL() << "expected DataLossError";
    } catch (const kwire::source::DataLossError& e) {
      EXPECT_EQ(e.kind(), kwire::source::DataLossKind::partition_offset_changed);
    }
  }
  {
    auto ck = Checkpoint::open_read_only(dir.path());
    EXPECT_EQ(ck.read_offsets(1), (PartitionOffsets{{"t", {{0, 4}}}}));
    EXPECT_FALSE(ck.has_commit(1));
  }
  // Still true: the replay fails the same way and writes nothing new.
  {
    StreamingQuery q(source_options(c, {{"failOnDataLoss", "true"}}), dir.path(), sink, every_call());
    EXPECT_THROW(q.run_once_batch(), kwire::source::DataLossError);
  }
  EXPECT_FALSE(fs::exists(dir.path() / "offsets" / "2"));
  // false: the logged batch 1 is replayed (empty, with the warning), then
  // reading continues from the new offset 4.
  c.append_values("t", 0, 2);
  StreamingQuery q(source_options(c, {{"failOnDataLoss", "false"}}), dir.path(), sink, every_call());
  auto b1 = q.run_once_batch();
  ASSERT_TRUE(b1.has_value());
  EXPECT_EQ(b1->batch_id, 1);
  EXPECT_TRUE(b1->replayed);
  EXPECT_EQ(b1->num_input_rows, 0);
  EXPECT_EQ(b1->end_offsets, (PartitionOffsets{{"t", {{0, 4}}}}));
  ASSERT_EQ(b1->warnings.size(), 1u);
  EXPECT_NE(b1->warnings[0].find("PARTITION_OFFSET_CHANGED"), std::string::npos) << b1->warnings[0];
  auto b2 = q.run_once_batch();
  ASSERT_TRUE(b2.has_value());
  EXPECT_EQ(b2->batch_id, 2);
  EXPECT_EQ(b2->num_input_rows, 2);
}

// A plan that finds loss writes nothing (--plan-only is read-only).
TEST(MockStreamParity, PlanOnlyWithPlanningDataLossWritesNothing) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 10);
  TempDir dir;
  BatchSink sink;
  {
    StreamingQuery q(source_options(c), dir.path(), sink, every_call());
    ASSERT_TRUE(q.run_once_batch().has_value());
  }
  c.recreate_topic("t", 1);
  StreamingQuery q(source_options(c), dir.path(), sink, every_call(), kwire::checkpoint::Access::read_only);
  EXPECT_THROW(q.plan_next_batch(), kwire::source::DataLossError);
  EXPECT_FALSE(fs::exists(dir.path() / "offsets" / "1"));
}

// AvailableNow: every batch's lag and latestOffset are against the end fixed
// at the start of the run, even when records arrive during the run.
TEST(MockStreamParity, AvailableNowLagIsAgainstThePrefetchedEnd) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 30);
  TempDir dir;
  BatchSink sink;
  std::vector<BatchProgress> seen;
  StreamingQuery q(source_options(c, {{"maxOffsetsPerTrigger", "10"}}), dir.path(), sink,
                   Trigger::parse("available-now"));
  q.run([&](const BatchProgress& p) {
    seen.push_back(p);
    if (seen.size() == 1) c.append_values("t", 0, 100);  // after the end (30) was fixed
  });
  ASSERT_EQ(seen.size(), 3u);
  const std::vector<std::int64_t> behind{20, 10, 0};
  for (std::size_t i = 0; i < seen.size(); ++i) {
    EXPECT_EQ(seen[i].latest_offsets, (PartitionOffsets{{"t", {{0, 30}}}})) << i;
    ASSERT_TRUE(seen[i].lag.has_value()) << i;
    EXPECT_EQ(seen[i].lag->max_offsets_behind_latest, behind[i]) << i;
    EXPECT_EQ(seen[i].lag->min_offsets_behind_latest, behind[i]) << i;
    EXPECT_NE(seen[i].to_json("d").find("\"latestOffset\":{\"t\":{\"0\":30}}"), std::string::npos)
        << seen[i].to_json("d");
  }
}

namespace {

std::vector<kwire::mock::RequestRecord> list_offsets_with_timestamp(const MockCluster& c, std::int64_t timestamp) {
  std::vector<kwire::mock::RequestRecord> out;
  for (auto& r : c.requests(kwire::protocol::ApiKey::list_offsets))
    if (!r.partitions.empty() && r.partitions[0].offset == timestamp) out.push_back(r);
  return out;
}

}  // namespace

// The initial offsets (here by timestamp) are fetched up to
// fetchOffset.numRetries times, fetchOffset.retryIntervalMs apart, before the
// query fails (Spark's withRetries); the client itself does not retry here.
TEST(MockStreamParity, InitialOffsetFetchIsRetriedFetchOffsetNumRetriesTimes) {
  using kwire::protocol::ApiKey;
  using kwire::protocol::ErrorCode;
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 3);
  const std::map<std::string, std::string> extra{{"startingTimestamp", "1"},
                                                 {"kafka.retries", "0"},
                                                 {"fetchOffset.numRetries", "3"},
                                                 {"fetchOffset.retryIntervalMs", "150"}};
  {
    c.fail_next(ApiKey::list_offsets, "t", 0, ErrorCode::not_leader_or_follower, 2);
    TempDir dir;
    BatchSink sink;
    StreamingQuery q(source_options(c, extra), dir.path(), sink, every_call());
    auto b0 = q.run_once_batch();
    ASSERT_TRUE(b0.has_value());
    EXPECT_EQ(b0->num_input_rows, 3);
    auto tries = list_offsets_with_timestamp(c, 1);
    ASSERT_EQ(tries.size(), 3u);
    for (std::size_t i = 1; i < tries.size(); ++i)
      EXPECT_GE(
          std::chrono::duration_cast<std::chrono::milliseconds>(tries[i].received - tries[i - 1].received).count(),
          140);
  }
  c.clear_requests();
  {
    c.fail_next(ApiKey::list_offsets, "t", 0, ErrorCode::not_leader_or_follower, 3);
    TempDir dir;
    BatchSink sink;
    StreamingQuery q(source_options(c, extra), dir.path(), sink, every_call());
    EXPECT_THROW(q.run_once_batch(), kwire::client::KafkaError);
    EXPECT_EQ(list_offsets_with_timestamp(c, 1).size(), 3u);
    EXPECT_FALSE(fs::exists(dir.path() / "sources" / "0" / "0"));
  }
}

// COULD_NOT_READ_OFFSET_RANGE names the group Spark's readers would use:
// "spark-kafka-source-<uuid>-<hash of the source's checkpoint path>-executor",
// or kafka.group.id when set.
TEST(MockStreamParity, CouldNotReadOffsetRangeNamesTheReadersGroup) {
  MockCluster c;
  for (bool with_group : {false, true}) {
    const std::string topic = with_group ? "g" : "t";
    c.create_topic(topic, 1);
    c.append_values(topic, 0, 5);
    TempDir dir;
    BatchSink sink;
    auto o = source_options(c, {{"failOnDataLoss", "true"}, {"subscribe", topic}});
    if (with_group) o["kafka.group.id"] = "my-group";
    StreamingQuery q(o, dir.path(), sink, every_call());
    ASSERT_TRUE(q.run_once_batch().has_value());
    c.append_values(topic, 0, 5);
    c.set_log_start_offset(topic, 0, 8);
    try {
      q.run_once_batch();
      FAIL() << "expected DataLossError";
    } catch (const kwire::source::DataLossError& e) {
      const std::string what = e.what();
      const auto at = what.find("with consumer group ");
      ASSERT_NE(at, std::string::npos) << what;
      const std::string group = what.substr(at + 20, what.find('.', at + 20) - at - 20);
      if (with_group) {
        EXPECT_EQ(group, "my-group");
      } else {
        const std::string path = "file:" + fs::absolute(dir.path()).lexically_normal().string() + "/sources/0";
        const std::string hash = std::to_string(kwire::source::java_string_hash(path));
        ASSERT_EQ(group.rfind("spark-kafka-source-", 0), 0u) << group;
        EXPECT_EQ(group.size(), std::string("spark-kafka-source-").size() + 36 + 1 + hash.size() + 9) << group;
        EXPECT_NE(group.find("-" + hash + "-executor"), std::string::npos) << group << " " << hash;
      }
    }
  }
}

TEST(MockStreamParity, JavaStringHashMatchesTheJvm) {
  // Values of "…".hashCode() on a JVM.
  EXPECT_EQ(kwire::source::java_string_hash(""), 0);
  EXPECT_EQ(kwire::source::java_string_hash("a"), 97);
  EXPECT_EQ(kwire::source::java_string_hash("hello"), 99162322);
  EXPECT_EQ(kwire::source::java_string_hash("file:/tmp/ck/sources/0"), -1243202469);
  EXPECT_EQ(kwire::source::java_string_hash("\xC3\xA9"), 233);              // é, one UTF-16 unit
  EXPECT_EQ(kwire::source::java_string_hash("\xF0\x9F\x98\x80"), 1772899);  // U+1F600, a surrogate pair
}
