// The batch query (spark.read.format("kafka")) against the in-process mock
// cluster: planned ranges for Spark's batch options, and reads with data loss
// raised or tolerated.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "kwire/mock/mock_cluster.hpp"
#include "kwire/source/batch.hpp"
#include "mock_source_support.hpp"

using kwire::mock::MockCluster;
using kwire::mock::MockRecord;
using kwire::source::BatchOffsetError;
using kwire::source::BatchQuery;
using kwire::source::DataLossError;
using kwire::source::DataLossKind;
using kwire::source::OffsetRange;
using kwire::source::SourceOptionError;
using kwire::source::TopicPartition;
using namespace kwire_test;

namespace {

// Batch options: subscribe=t, no startingOffsets (the batch default applies).
std::map<std::string, std::string> batch_options(const MockCluster& c, std::map<std::string, std::string> extra = {}) {
  auto o = source_options(c);
  o.erase("startingOffsets");
  for (auto& [k, v] : extra) o[k] = v;
  return o;
}

OffsetRange range(const std::string& topic, std::int32_t p, std::int64_t from, std::int64_t until) {
  return OffsetRange{TopicPartition{topic, p}, from, until, std::nullopt};
}

// Partition 0 of t holds 5 records with timestamps 1000, 2000, ... 5000.
void append_timed(MockCluster& c) {
  for (int i = 1; i <= 5; ++i) c.append("t", 0, {MockRecord{std::nullopt, "v" + std::to_string(i - 1), i * 1000}});
}

}  // namespace

TEST(MockBatch, DefaultsReadEarliestToLatest) {
  MockCluster c;
  c.create_topic("t", 2);
  c.append_values("t", 0, 5);
  c.append_values("t", 1, 3);
  BatchQuery q(batch_options(c));
  auto plan = q.plan();
  EXPECT_EQ(plan.ranges, (std::vector<OffsetRange>{range("t", 0, 0, 5), range("t", 1, 0, 3)}));
  EXPECT_EQ(plan.to_json(), R"({"startOffsets":{"t":{"0":0,"1":0}},"endOffsets":{"t":{"0":5,"1":3}},"ranges":[)"
                            R"({"topic":"t","partition":0,"fromOffset":0,"untilOffset":5},)"
                            R"({"topic":"t","partition":1,"fromOffset":0,"untilOffset":3}]})");
  BatchSink sink;
  auto result = q.read(plan, sink);
  EXPECT_EQ(result.rows, 8);
  EXPECT_EQ(result.output_rows, 8);
  auto expected = rows_of("t-0", 0, 5);
  auto p1 = rows_of("t-1", 0, 3);
  expected.insert(expected.end(), p1.begin(), p1.end());
  EXPECT_EQ(sink.batches.at(0), expected);
}

TEST(MockBatch, JsonOffsetsBindEarliestAndLatest) {
  MockCluster c;
  c.create_topic("t", 2);
  c.append_values("t", 0, 6);
  c.append_values("t", 1, 4);
  c.set_log_start_offset("t", 1, 1);
  BatchQuery q(
      batch_options(c, {{"startingOffsets", R"({"t":{"0":2,"1":-2}})"}, {"endingOffsets", R"({"t":{"0":5,"1":-1}})"}}));
  auto plan = q.plan();
  EXPECT_EQ(plan.ranges, (std::vector<OffsetRange>{range("t", 0, 2, 5), range("t", 1, 1, 4)}));
  BatchSink sink;
  q.read(plan, sink);
  auto expected = rows_of("t-0", 2, 5);
  auto p1 = rows_of("t-1", 1, 4);
  expected.insert(expected.end(), p1.begin(), p1.end());
  EXPECT_EQ(sink.batches.at(0), expected);
}

TEST(MockBatch, EmptyPartitionsAreLeftOut) {
  MockCluster c;
  c.create_topic("t", 2);
  c.append_values("t", 1, 2);
  BatchQuery q(batch_options(c));
  auto plan = q.plan();
  EXPECT_EQ(plan.ranges, (std::vector<OffsetRange>{range("t", 1, 0, 2)}));
  EXPECT_EQ(plan.start.at("t").at(0), 0);
  EXPECT_EQ(plan.end.at("t").at(0), 0);
}

TEST(MockBatch, TimestampsFromStartToEnd) {
  MockCluster c;
  c.create_topic("t", 1);
  append_timed(c);
  // startingOffsetsByTimestamp: first record with timestamp >= 2000 is offset 1;
  // endingOffsetsByTimestamp 4000: offset 3 (exclusive).
  BatchQuery by_partition(batch_options(
      c, {{"startingOffsetsByTimestamp", R"({"t":{"0":2000}})"}, {"endingOffsetsByTimestamp", R"({"t":{"0":4000}})"}}));
  auto plan = by_partition.plan();
  EXPECT_EQ(plan.ranges, (std::vector<OffsetRange>{range("t", 0, 1, 3)}));
  BatchSink sink;
  by_partition.read(plan, sink);
  EXPECT_EQ(sink.batches.at(0), (std::vector<std::string>{"t-0@1=v1", "t-0@2=v2"}));

  // startingTimestamp wins over startingOffsets; an end timestamp past every
  // record resolves to latest.
  BatchQuery global(batch_options(
      c, {{"startingTimestamp", "2500"}, {"startingOffsets", R"({"t":{"0":0}})"}, {"endingTimestamp", "9000"}}));
  EXPECT_EQ(global.plan().ranges, (std::vector<OffsetRange>{range("t", 0, 2, 5)}));
}

TEST(MockBatch, StartTimestampWithoutMatchFollowsStrategy) {
  MockCluster c;
  c.create_topic("t", 1);
  append_timed(c);
  BatchQuery strict(batch_options(c, {{"startingTimestamp", "9000"}, {"fetchOffset.numRetries", "3"}}));
  c.clear_requests();
  try {
    strict.plan();
    FAIL() << "expected SourceOptionError";
  } catch (const SourceOptionError& e) {
    EXPECT_STREQ(e.what(), "No offset matched from request of topic-partition t-0 and timestamp 9000.");
  }
  // Retried as Spark's withRetries does: one timestamp look-up per attempt.
  EXPECT_EQ(c.requests(kwire::protocol::ApiKey::list_offsets).size(), 3u);
  BatchQuery to_latest(
      batch_options(c, {{"startingTimestamp", "9000"}, {"startingOffsetsByTimestampStrategy", "latest"}}));
  auto plan = to_latest.plan();
  EXPECT_TRUE(plan.ranges.empty());
  EXPECT_EQ(plan.start.at("t").at(0), 5);
  EXPECT_EQ(plan.end.at("t").at(0), 5);
}

TEST(MockBatch, MinPartitionsAndMaxRecordsSplitAsSpark) {
  MockCluster c;
  c.create_topic("t", 2);
  c.append_values("t", 0, 20, 5);
  c.append_values("t", 1, 4);
  // Spark's calculator with minPartitions=4 over [0,20) and [0,4): parts
  // round(20/24*4)=3 and max(round(4/24*4),1)=1, so t-1 stays whole and t-0
  // is split in 3 over 20 offsets.
  BatchQuery q(batch_options(c, {{"minPartitions", "4"}}));
  auto plan = q.plan();
  EXPECT_EQ(plan.ranges, (std::vector<OffsetRange>{range("t", 0, 0, 6), range("t", 0, 6, 13), range("t", 0, 13, 20),
                                                   range("t", 1, 0, 4)}));
  BatchSink sink;
  auto result = q.read(plan, sink);
  EXPECT_EQ(result.rows, 24);
  auto expected = rows_of("t-0", 0, 20);
  auto p1 = rows_of("t-1", 0, 4);
  expected.insert(expected.end(), p1.begin(), p1.end());
  EXPECT_EQ(sink.batches.at(0), expected);

  auto assign_options = batch_options(c, {{"maxRecordsPerPartition", "8"}, {"assign", R"({"t":[0]})"}});
  assign_options.erase("subscribe");
  BatchQuery capped(assign_options);
  EXPECT_EQ(capped.plan().ranges,
            (std::vector<OffsetRange>{range("t", 0, 0, 6), range("t", 0, 6, 13), range("t", 0, 13, 20)}));
}

TEST(MockBatch, LostStartFailsWithFailOnDataLoss) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 10);
  BatchQuery q(batch_options(c, {{"startingOffsets", R"({"t":{"0":2}})"}}));
  auto plan = q.plan();
  EXPECT_EQ(plan.ranges, (std::vector<OffsetRange>{range("t", 0, 2, 10)}));
  c.set_log_start_offset("t", 0, 5);  // retention passes the start after planning
  BatchSink sink;
  try {
    q.read(plan, sink);
    FAIL() << "expected DataLossError";
  } catch (const DataLossError& e) {
    EXPECT_EQ(e.kind(), DataLossKind::could_not_read_offset_range);
    EXPECT_EQ(e.start_offset(), 2);
    EXPECT_EQ(e.end_offset(), 10);
  }
  EXPECT_TRUE(sink.rows.empty());
}

TEST(MockBatch, LostStartSkippedWithoutFailOnDataLoss) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 10);
  BatchQuery q(batch_options(c, {{"startingOffsets", R"({"t":{"0":2}})"}, {"failOnDataLoss", "false"}}));
  auto plan = q.plan();
  c.set_log_start_offset("t", 0, 5);
  BatchSink sink;
  auto result = q.read(plan, sink);
  EXPECT_EQ(sink.batches.at(0), rows_of("t-0", 5, 10));
  EXPECT_EQ(result.rows, 5);
  EXPECT_EQ(result.offset_out_of_range, 3);
  EXPECT_EQ(result.data_loss, 1);
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_NE(result.warnings[0].find("COULD_NOT_READ_OFFSET_RANGE"), std::string::npos);
}

TEST(MockBatch, StartAboveResolvedEndIsAnError) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 3);
  for (const char* fail : {"true", "false"}) {
    BatchQuery q(batch_options(c, {{"startingOffsets", R"({"t":{"0":7}})"}, {"failOnDataLoss", fail}}));
    try {
      q.plan();
      FAIL() << "expected BatchOffsetError";
    } catch (const BatchOffsetError& e) {
      EXPECT_STREQ(e.what(),
                   "[RESOLVED_START_OFFSET_GREATER_THAN_END_OFFSET] The resolved start offset 7 is greater than the "
                   "end offset 3 for topic t partition 0.");
    }
  }
}

TEST(MockBatch, JsonOffsetsMustNameEveryPartition) {
  MockCluster c;
  c.create_topic("t", 2);
  BatchQuery q(batch_options(c, {{"endingOffsets", R"({"t":{"0":1}})"}}));
  try {
    q.plan();
    FAIL() << "expected SourceOptionError";
  } catch (const SourceOptionError& e) {
    EXPECT_STREQ(e.what(),
                 "[KAFKA_START_OFFSET_DOES_NOT_MATCH_ASSIGNED] Partitions specified for Kafka start offsets don't "
                 "match what are assigned. Maybe topic partitions are created \nor deleted while the query is running. "
                 "Use -1 for latest, -2 for earliest.\nSpecified: Set(t-0) Assigned: Set(t-0, t-1)");
  }
  // Not retried (Spark checks these outside its retries): no offset is listed.
  c.clear_requests();
  BatchQuery start(batch_options(c, {{"startingOffsets", R"({"t":{"1":0}})"}}));
  EXPECT_THROW(start.plan(), SourceOptionError);
  EXPECT_TRUE(c.requests(kwire::protocol::ApiKey::list_offsets).empty());
}

TEST(MockBatch, RateOptionsAreIgnoredWithWarnings) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 4);
  BatchQuery q(batch_options(c, {{"maxOffsetsPerTrigger", "1"}}));
  auto plan = q.plan();
  EXPECT_EQ(plan.ranges, (std::vector<OffsetRange>{range("t", 0, 0, 4)}));
  EXPECT_EQ(plan.warnings, (std::vector<std::string>{"maxOffsetsPerTrigger option ignored in batch queries"}));
}

TEST(MockBatch, SubscribePatternReadsMatchingTopics) {
  MockCluster c;
  c.create_topic("events-a", 1);
  c.create_topic("events-b", 1);
  c.create_topic("other", 1);
  c.append_values("events-a", 0, 2);
  c.append_values("events-b", 0, 1);
  c.append_values("other", 0, 3);
  auto o = batch_options(c, {{"subscribePattern", "^events-"}});
  o.erase("subscribe");
  BatchQuery q(o);
  auto plan = q.plan();
  EXPECT_EQ(plan.ranges, (std::vector<OffsetRange>{range("events-a", 0, 0, 2), range("events-b", 0, 0, 1)}));
  BatchSink sink;
  q.read(plan, sink);
  EXPECT_EQ(sink.batches.at(0), (std::vector<std::string>{"events-a-0@0=v0", "events-a-0@1=v1", "events-b-0@0=v0"}));
}

TEST(MockBatch, EmptyTopicPlansNothingAndReadsNothing) {
  MockCluster c;
  c.create_topic("t", 1);
  BatchQuery q(batch_options(c));
  auto plan = q.plan();
  EXPECT_EQ(plan.to_json(), R"({"startOffsets":{"t":{"0":0}},"endOffsets":{"t":{"0":0}},"ranges":[]})");
  BatchSink sink;
  auto result = q.read(plan, sink);
  EXPECT_EQ(result.rows, 0);
  EXPECT_TRUE(sink.batches.at(0).empty());
}

TEST(MockBatch, TimestampEndMustNameEveryPartition) {
  MockCluster c;
  c.create_topic("t", 2);
  BatchQuery q(
      batch_options(c, {{"endingOffsetsByTimestamp", R"({"t":{"0":1000}})"}, {"fetchOffset.numRetries", "3"}}));
  c.clear_requests();
  try {
    q.plan();
    FAIL() << "expected SourceOptionError";
  } catch (const SourceOptionError& e) {
    EXPECT_STREQ(e.what(),
                 "[KAFKA_TIMESTAMP_OFFSET_DOES_NOT_MATCH_ASSIGNED] Partitions specified for Kafka timestamp based end "
                 "offsets don't match what are assigned. Maybe topic partitions are created \nor deleted while the "
                 "query is running, or you didn't specify all the partitions.\nSpecified: Set(t-0) Assigned: Set(t-0, "
                 "t-1)");
  }
  // Retried: the partitions are listed again for each of the 3 attempts.
  EXPECT_EQ(c.requests(kwire::protocol::ApiKey::metadata).size(), 3u);
}

TEST(MockBatch, AssignedPartitionThatDoesNotExistIsLeftOut) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 4);
  auto o = batch_options(c, {{"assign", R"({"t":[0,3]})"}});
  o.erase("subscribe");
  BatchQuery q(o);
  // As Spark's AssignStrategy: partition 3 does not exist and is left out.
  EXPECT_EQ(q.plan().ranges, (std::vector<OffsetRange>{range("t", 0, 0, 4)}));
}
