// The streaming query reads every batch with one consumer (as Spark's
// executors cache theirs): connections to the mock cluster do not grow with
// the number of batches, a prefetch in flight at the end of a batch neither
// leaks records into the next batch nor repeats any, partitions may leave and
// rejoin the batches, and a failed read gets a fresh consumer. RangeReader on
// its own: ranges read one after another with the caller's consumer.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "../temp_dir.hpp"
#include "kwire/client/consumer.hpp"
#include "kwire/mock/mock_cluster.hpp"
#include "kwire/source/stream.hpp"
#include "mock_source_support.hpp"

using kwire::mock::MockCluster;
using kwire::source::BatchProgress;
using kwire::source::DataLossError;
using kwire::source::OffsetRange;
using kwire::source::RangeReader;
using kwire::source::RangeReaderOptions;
using kwire::source::Row;
using kwire::source::StreamingQuery;
using kwire::source::Trigger;
using kwire_test::TempDir;
using namespace kwire_test;

namespace {

// Sorted by partition, then offset (rows of different partitions may come in
// any order, those of one partition come in offset order).
std::vector<std::string> sorted(std::vector<std::string> v) {
  std::stable_sort(v.begin(), v.end(), [](const std::string& a, const std::string& b) {
    return a.substr(0, a.find('@')) < b.substr(0, b.find('@'));
  });
  return v;
}

// The rows a batch should hold: every offset of its ranges.
std::vector<std::string> rows_in_ranges(const BatchProgress& p) {
  std::vector<std::string> out;
  for (auto& r : p.ranges)
    for (auto& row : rows_of(r.tp.topic + "-" + std::to_string(r.tp.partition), r.from_offset, r.until_offset))
      out.push_back(row);
  return out;
}

}  // namespace

TEST(MockStreamConsumer, OneConsumerServesEveryBatch) {
  MockCluster c;
  c.create_topic("t", 2);
  c.append_values("t", 0, 3);
  c.append_values("t", 1, 2);
  TempDir dir;
  BatchSink sink;
  StreamingQuery q(source_options(c), dir / "ck", sink, every_call());
  EXPECT_EQ(q.connection_stats().consumers_created, 0u);
  ASSERT_TRUE(q.run_once_batch().has_value());
  const int accepted_after_first = c.connections_accepted();
  const auto first = q.connection_stats();
  EXPECT_EQ(first.consumers_created, 1u);
  EXPECT_GT(first.consumer_connects, 0u);
  EXPECT_EQ(first.connects, first.admin_connects + first.consumer_connects);
  EXPECT_EQ(static_cast<int>(first.connects), accepted_after_first);

  std::int64_t ends[2] = {3, 2};
  for (int batch = 1; batch < 8; ++batch) {
    c.append_values("t", 0, 2);
    c.append_values("t", 1, batch % 3);  // partition 1 sometimes has nothing new
    ends[0] += 2;
    ends[1] += batch % 3;
    auto p = q.run_once_batch();
    ASSERT_TRUE(p.has_value()) << "batch " << batch;
    EXPECT_EQ(p->batch_id, batch);
    EXPECT_EQ(sorted(sink.batches[batch]), sorted(rows_in_ranges(*p))) << "batch " << batch;
  }
  EXPECT_EQ(c.connections_accepted(), accepted_after_first);
  const auto last = q.connection_stats();
  EXPECT_EQ(last.connects, first.connects);
  EXPECT_EQ(last.consumer_connects, first.consumer_connects);
  EXPECT_EQ(last.consumers_created, 1u);
  EXPECT_EQ(sink.batches.size(), 8u);
  auto want = rows_of("t-0", 0, ends[0]);
  for (auto& r : rows_of("t-1", 0, ends[1])) want.push_back(r);
  EXPECT_EQ(sorted(sink.all()), sorted(want));
  EXPECT_FALSE(q.run_once_batch().has_value());
}

TEST(MockStreamConsumer, PrefetchInFlightAcrossBatchesNeitherLeaksNorRepeats) {
  MockCluster c;
  c.create_topic("t", 2);
  c.append_values("t", 0, 20, 5);
  c.append_values("t", 1, 20, 4);
  TempDir dir;
  BatchSink sink;
  // Batches of 6 offsets while each fetch brings whole batches of records
  // (data past the range is buffered or in flight when a batch ends), and a
  // long broker wait so the prefetch sent at a batch's end is still pending
  // when the next batch starts.
  StreamingQuery q(source_options(c, {{"maxOffsetsPerTrigger", "6"}, {"kafka.fetch.max.wait.ms", "100"}}), dir / "ck",
                   sink, every_call());
  std::int64_t ends[2] = {20, 20};
  int batches = 0;
  for (; batches < 40; ++batches) {
    if (batches == 3 || batches == 6) {
      c.append_values("t", 0, 4, 2);
      c.append_values("t", 1, 3, 3);
      ends[0] += 4;
      ends[1] += 3;
    }
    auto p = q.run_once_batch();
    if (!p) break;
    EXPECT_EQ(sorted(sink.batches[p->batch_id]), sorted(rows_in_ranges(*p))) << "batch " << p->batch_id;
  }
  EXPECT_GE(batches, 8);
  auto want = rows_of("t-0", 0, ends[0]);
  for (auto& r : rows_of("t-1", 0, ends[1])) want.push_back(r);
  EXPECT_EQ(sorted(sink.all()), sorted(want));
  EXPECT_EQ(sink.all().size(), want.size());
  EXPECT_EQ(q.connection_stats().consumers_created, 1u);
}

TEST(MockStreamConsumer, PartitionsLeavingAndRejoiningTheBatches) {
  MockCluster c;
  c.create_topic("t", 3);
  c.append_values("t", 0, 2);
  TempDir dir;
  BatchSink sink;
  StreamingQuery q(source_options(c), dir / "ck", sink, every_call());
  auto b0 = q.run_once_batch();
  ASSERT_TRUE(b0.has_value());
  EXPECT_EQ(sink.batches[0], rows_of("t-0", 0, 2));
  c.append_values("t", 2, 3);
  auto b1 = q.run_once_batch();
  ASSERT_TRUE(b1.has_value());
  EXPECT_EQ(sink.batches[1], rows_of("t-2", 0, 3));
  c.append_values("t", 0, 1);
  c.append_values("t", 1, 1);
  auto b2 = q.run_once_batch();
  ASSERT_TRUE(b2.has_value());
  EXPECT_EQ(sorted(sink.batches[2]), sorted({"t-0@2=v2", "t-1@0=v0"}));
  c.append_values("t", 0, 1);
  c.append_values("t", 1, 1);
  c.append_values("t", 2, 1);
  auto b3 = q.run_once_batch();
  ASSERT_TRUE(b3.has_value());
  EXPECT_EQ(sorted(sink.batches[3]), sorted({"t-0@3=v3", "t-1@1=v1", "t-2@3=v3"}));
  EXPECT_EQ(q.connection_stats().consumers_created, 1u);
}

TEST(MockStreamConsumer, AFailedReadGetsAFreshConsumer) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 5);
  TempDir dir;
  BatchSink sink;
  StreamingQuery q(source_options(c, {{"failOnDataLoss", "true"}}), dir / "ck", sink, every_call());
  ASSERT_TRUE(q.run_once_batch().has_value());
  EXPECT_EQ(q.connection_stats().consumers_created, 1u);
  const auto before = q.connection_stats();
  c.append_values("t", 0, 5);
  c.set_log_start_offset("t", 0, 8);
  EXPECT_THROW(q.run_once_batch(), DataLossError);
  // The failed read's consumer is closed; its connections stay counted.
  const auto after_failure = q.connection_stats();
  EXPECT_EQ(after_failure.consumers_created, 1u);
  EXPECT_EQ(after_failure.consumer_connects, before.consumer_connects);
  // The replay of the logged batch reads with a new consumer (and fails again).
  EXPECT_THROW(q.run_once_batch(), DataLossError);
  const auto after_replay = q.connection_stats();
  EXPECT_EQ(after_replay.consumers_created, 2u);
  EXPECT_GT(after_replay.consumer_connects, before.consumer_connects);
  EXPECT_EQ(sink.batches.size(), 1u);
}

TEST(RangeReader, ReadsRangesOneAfterAnotherWithTheCallersConsumer) {
  MockCluster c;
  c.create_topic("t", 2);
  c.append_values("t", 0, 10, 3);
  c.append_values("t", 1, 6, 2);
  auto props = RangeReader::consumer_properties(
      {{"bootstrap.servers", c.bootstrap_servers()}, {"fetch.max.wait.ms", "20"}, {"request.timeout.ms", "3000"}});
  EXPECT_EQ(props.at("auto.offset.reset"), "none");
  EXPECT_EQ(props.at("max.poll.records"), "20000");
  kwire::client::Consumer consumer(props);
  RangeReaderOptions opts;
  opts.poll_timeout_ms = 5000;
  RangeReader reader(consumer, opts);
  BatchSink sink;
  auto range = [](int p, std::int64_t from, std::int64_t until) {
    return OffsetRange{kwire::source::TopicPartition{"t", p}, from, until, std::nullopt};
  };

  sink.begin_batch(0);
  auto r0 = reader.read({range(0, 2, 5), range(0, 5, 7)}, sink);
  sink.commit_batch(0);
  EXPECT_EQ(r0.rows, 5);
  EXPECT_EQ(sink.batches[0], rows_of("t-0", 2, 7));
  EXPECT_EQ(consumer.assignment(), (std::vector<kwire::client::TopicPartition>{{"t", 0}}));

  sink.begin_batch(1);
  auto r1 = reader.read({range(0, 0, 3), range(1, 1, 4)}, sink);
  sink.commit_batch(1);
  EXPECT_EQ(r1.rows, 6);
  auto want = rows_of("t-0", 0, 3);
  for (auto& r : rows_of("t-1", 1, 4)) want.push_back(r);
  EXPECT_EQ(sorted(sink.batches[1]), sorted(want));
  EXPECT_EQ(consumer.assignment().size(), 2u);

  // Records aged out before the read: skipped with a warning when allowed.
  c.set_log_start_offset("t", 0, 8);
  RangeReaderOptions lenient = opts;
  lenient.fail_on_data_loss = false;
  sink.begin_batch(2);
  auto r2 = RangeReader(consumer, lenient).read({range(0, 6, 10)}, sink);
  sink.commit_batch(2);
  EXPECT_EQ(sink.batches[2], rows_of("t-0", 8, 10));
  EXPECT_EQ(r2.offset_out_of_range, 2);
  EXPECT_EQ(r2.data_loss, 1);
  ASSERT_EQ(r2.warnings.size(), 1u);
  EXPECT_NE(r2.warnings[0].find("KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE"), std::string::npos) << r2.warnings[0];
  sink.begin_batch(3);
  EXPECT_THROW(reader.read({range(0, 6, 10)}, sink), DataLossError);
}

// Consecutive ranges of one partition (maxOffsetsPerTrigger): what the first
// read fetched past its end is kept for the next one, which therefore sends
// no Fetch of its own and does not wait for the one at the log end.
TEST(RangeReader, ConsecutiveRangesUseWhatWasFetchedPastTheFirstEnd) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 12, 12);  // one batch: the first answer holds all 12
  auto props = RangeReader::consumer_properties(
      {{"bootstrap.servers", c.bootstrap_servers()}, {"fetch.max.wait.ms", "20"}, {"request.timeout.ms", "3000"}});
  kwire::client::Consumer consumer(props);
  RangeReaderOptions opts;
  opts.poll_timeout_ms = 5000;
  RangeReader reader(consumer, opts);
  BatchSink sink;
  const kwire::source::TopicPartition tp{"t", 0};
  sink.begin_batch(0);
  auto r0 = reader.read({OffsetRange{tp, 0, 4, std::nullopt}}, sink);
  sink.commit_batch(0);
  EXPECT_EQ(r0.rows, 4);
  EXPECT_EQ(sink.batches[0], rows_of("t-0", 0, 4));
  EXPECT_EQ(consumer.known_position({"t", 0}), 4);  // stopped at the range end, not past it

  auto fetched_from = [&](std::int64_t offset) {
    int n = 0;
    for (auto& r : c.requests(kwire::protocol::ApiKey::fetch))
      for (auto& p : r.partitions)
        if (p.topic == "t" && p.partition == 0 && p.offset == offset) ++n;
    return n;
  };
  EXPECT_EQ(fetched_from(4), 0);
  sink.begin_batch(1);
  auto r1 = reader.read({OffsetRange{tp, 4, 9, std::nullopt}}, sink);
  sink.commit_batch(1);
  EXPECT_EQ(r1.rows, 5);
  EXPECT_EQ(sink.batches[1], rows_of("t-0", 4, 9));
  sink.begin_batch(2);
  auto r2 = reader.read({OffsetRange{tp, 9, 12, std::nullopt}}, sink);
  sink.commit_batch(2);
  EXPECT_EQ(sink.batches[2], rows_of("t-0", 9, 12));
  // Nothing was fetched again from 4 or 9: both came from the first answer.
  EXPECT_EQ(fetched_from(4), 0);
  EXPECT_EQ(fetched_from(9), 0);
  (void)r2;
}
