// The streaming source's guards against the in-process mock cluster: an
// assigned partition or topic that does not exist, --plan-only's read-only checkpoint (nothing
// created, an existing checkpoint byte-for-byte unchanged, the query's
// planning state untouched), the checkpoint lock between two queries, and the
// polling delay of a processing-time trigger that finds no data, and the
// trigger times (interval boundaries, maxTriggerDelay) on a manual clock.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "../manual_clock.hpp"
#include "../temp_dir.hpp"
#include "kwire/checkpoint/checkpoint.hpp"
#include "kwire/client/errors.hpp"
#include "kwire/mock/mock_cluster.hpp"
#include "kwire/source/stream.hpp"

using kwire::checkpoint::Access;
using kwire::checkpoint::CheckpointError;
using kwire::mock::MockCluster;
using kwire::source::Row;
using kwire::source::SourceOptionError;
using kwire::source::StreamingQuery;
using kwire::source::Trigger;
using kwire_test::ManualQueryClock;
using kwire_test::TempDir;
namespace fs = std::filesystem;

namespace {

class CountSink : public kwire::source::Sink {
 public:
  void begin_batch(std::int64_t) override { current_ = 0; }
  void write(std::span<const Row> r) override { current_ += static_cast<std::int64_t>(r.size()); }
  std::int64_t commit_batch(std::int64_t) override {
    rows += current_;
    return current_;
  }
  std::int64_t rows = 0;

 private:
  std::int64_t current_ = 0;
};

std::map<std::string, std::string> options(const MockCluster& c, std::map<std::string, std::string> extra) {
  std::map<std::string, std::string> o{{"kafka.bootstrap.servers", c.bootstrap_servers()},
                                       {"startingOffsets", "earliest"},
                                       {"kafka.request.timeout.ms", "3000"},
                                       {"fetchOffset.retryIntervalMs", "10"},
                                       {"kafkaConsumer.pollTimeoutMs", "5000"}};
  for (auto& [k, v] : extra) o[k] = v;
  return o;
}

Trigger every(std::int64_t interval_ms) {
  Trigger t;
  t.kind = Trigger::Kind::processing_time;
  t.interval_ms = interval_ms;
  return t;
}

Trigger every_call() { return every(0); }

// Fails (like a crash) while committing one chosen batch.
class FailAtCommitSink : public CountSink {
 public:
  explicit FailAtCommitSink(std::int64_t fail_batch) : fail_batch_(fail_batch) {}
  std::int64_t commit_batch(std::int64_t id) override {
    if (id == fail_batch_) throw std::runtime_error("simulated crash before the batch was committed");
    return CountSink::commit_batch(id);
  }

 private:
  std::int64_t fail_batch_;
};

// Every file and folder under `dir`: relative path -> content and mtime.
std::map<std::string, std::string> snapshot(const fs::path& dir) {
  std::map<std::string, std::string> out;
  for (auto& e : fs::recursive_directory_iterator(dir)) {
    const auto rel = fs::relative(e.path(), dir).string();
    const auto mtime = std::to_string(fs::last_write_time(e.path()).time_since_epoch().count());
    if (e.is_directory()) {
      out[rel] = "<folder> " + mtime;
      continue;
    }
    std::ifstream in(e.path(), std::ios::binary);
    out[rel] = std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()) + " " + mtime;
  }
  return out;
}

std::size_t entries_under(const fs::path& dir) {
  std::size_t n = 0;
  for ([[maybe_unused]] auto& e : fs::recursive_directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST(MockStreamGuards, AssignedPartitionThatDoesNotExistIsLeftOutButAMissingTopicFails) {
  MockCluster c;
  c.create_topic("t", 2);
  c.append_values("t", 0, 3);
  c.append_values("t", 1, 2);
  TempDir dir;
  CountSink sink;
  // A missing topic fails (after fetchOffset.numRetries attempts), as in Spark:
  // nothing is written.
  StreamingQuery missing(options(c, {{"assign", R"({"nosuch":[0],"t":[0]})"}}), dir / "ck", sink, every_call());
  try {
    missing.run_once_batch();
    FAIL() << "expected a KafkaError";
  } catch (const kwire::client::KafkaError& e) {
    EXPECT_NE(std::string(e.what()).find("This server does not host this topic-partition. (assigned topic 'nosuch', "
                                         "UNKNOWN_TOPIC_OR_PARTITION)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(fs::exists(dir / "ck" / "sources" / "0" / "0"));
  EXPECT_FALSE(fs::exists(dir / "ck" / "offsets" / "0"));
  EXPECT_EQ(sink.rows, 0);

  // Partition 7 of an existing topic is left out; 0 is read.
  StreamingQuery q(options(c, {{"assign", R"({"t":[0,7]})"}}), dir / "ck2", sink, every_call());
  auto b = q.run_once_batch();
  ASSERT_TRUE(b.has_value());
  EXPECT_EQ(sink.rows, 3);
  EXPECT_EQ(b->end_offsets, (kwire::source::PartitionOffsets{{"t", {{0, 3}}}}));
}

TEST(MockStreamGuards, PlanOnlyCreatesNothingInAnEmptyCheckpoint) {
  MockCluster c;
  c.create_topic("t", 2);
  c.append_values("t", 0, 4);
  TempDir dir;
  const auto empty = dir / "ck";
  fs::create_directory(empty);
  CountSink sink;
  StreamingQuery q(options(c, {{"subscribe", "t"}}), empty, sink, every_call(), Access::read_only);
  EXPECT_EQ(q.next_batch_id(), 0);
  auto plan = q.plan_next_batch();
  ASSERT_TRUE(plan.has_value());
  EXPECT_EQ(plan->end_offsets, (kwire::checkpoint::PartitionOffsets{{"t", {{0, 4}, {1, 0}}}}));
  EXPECT_EQ(entries_under(empty), 0u);
  EXPECT_EQ(sink.rows, 0);
  // Running a batch on a read-only checkpoint is refused.
  EXPECT_THROW(q.run_once_batch(), CheckpointError);
  EXPECT_EQ(entries_under(empty), 0u);

  // A missing folder is not created either.
  StreamingQuery missing(options(c, {{"subscribe", "t"}}), dir / "none", sink, every_call(), Access::read_only);
  EXPECT_TRUE(missing.plan_next_batch().has_value());
  EXPECT_FALSE(fs::exists(dir / "none"));
}

TEST(MockStreamGuards, PlanLeavesAnExistingCheckpointByteForByteUnchanged) {
  MockCluster c;
  c.create_topic("t", 2);
  c.append_values("t", 0, 4);
  TempDir dir;
  const auto ck = dir / "ck";
  {
    // Two committed batches, then a third logged in offsets/2 but not committed.
    FailAtCommitSink sink(2);
    StreamingQuery q(options(c, {{"subscribe", "t"}}), ck, sink, every_call());
    ASSERT_TRUE(q.run_once_batch().has_value());
    c.append_values("t", 1, 3);
    ASSERT_TRUE(q.run_once_batch().has_value());
    c.append_values("t", 0, 2);
    EXPECT_THROW(q.run_once_batch(), std::runtime_error);
  }
  ASSERT_TRUE(fs::exists(ck / "offsets" / "2"));
  ASSERT_FALSE(fs::exists(ck / "commits" / "2"));
  c.append_values("t", 1, 5);
  const auto before = snapshot(ck);
  ASSERT_GT(before.size(), 8u);
  CountSink sink;
  StreamingQuery planner(options(c, {{"subscribe", "t"}}), ck, sink, every_call(), Access::read_only);
  auto plan = planner.plan_next_batch();
  ASSERT_TRUE(plan.has_value());
  // The uncommitted batch is planned again with its logged range.
  EXPECT_TRUE(plan->replayed);
  EXPECT_EQ(plan->batch_id, 2);
  EXPECT_EQ(plan->end_offsets, (kwire::checkpoint::PartitionOffsets{{"t", {{0, 6}, {1, 3}}}}));
  EXPECT_EQ(planner.next_batch_id(), 2);
  EXPECT_EQ(sink.rows, 0);
  EXPECT_EQ(snapshot(ck), before);
}

TEST(MockStreamGuards, PlanDoesNotChangeTheQueryState) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 4);
  TempDir dir;
  {
    // AvailableNow fixes its end at the first plan of a run; a plan alone
    // must not fix it.
    CountSink sink;
    Trigger available_now;
    StreamingQuery q(options(c, {{"subscribe", "t"}}), dir / "ck1", sink, available_now);
    auto plan = q.plan_next_batch();
    ASSERT_TRUE(plan.has_value());
    EXPECT_EQ(plan->end_offsets.at("t").at(0), 4);
    c.append_values("t", 0, 3);
    q.run();
    EXPECT_EQ(sink.rows, 7);
  }
  {
    // The first trigger of a query always fires despite minOffsetsPerTrigger;
    // a plan must not count as that first trigger.
    CountSink sink;
    StreamingQuery q(options(c, {{"subscribe", "t"}, {"minOffsetsPerTrigger", "100"}, {"maxTriggerDelay", "1h"}}),
                     dir / "ck2", sink, every_call());
    ASSERT_TRUE(q.plan_next_batch().has_value());
    ASSERT_TRUE(q.plan_next_batch().has_value());
    auto batch = q.run_once_batch();
    ASSERT_TRUE(batch.has_value());
    EXPECT_EQ(sink.rows, 7);
    // Now the delay applies: 1 new offset is below the minimum.
    c.append_values("t", 0, 1);
    EXPECT_FALSE(q.plan_next_batch().has_value());
    EXPECT_FALSE(q.run_once_batch().has_value());
  }
}

TEST(MockStreamGuards, SecondQueryOnALockedCheckpointFailsFast) {
  MockCluster c;
  c.create_topic("t", 1);
  TempDir dir;
  CountSink sink;
  StreamingQuery first(options(c, {{"subscribe", "t"}}), dir / "ck", sink, every_call());
  try {
    StreamingQuery second(options(c, {{"subscribe", "t"}}), dir / "ck", sink, every_call());
    FAIL() << "expected a CheckpointError";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("is in use by another running query (pid "), std::string::npos) << e.what();
  }
  // A read-only planner may look at it meanwhile.
  StreamingQuery planner(options(c, {{"subscribe", "t"}}), dir / "ck", sink, every_call(), Access::read_only);
  EXPECT_EQ(planner.next_batch_id(), 0);
}

TEST(MockStreamGuards, ProcessingTimeZeroWaitsThePollingDelayWhenThereIsNoData) {
  MockCluster c;
  c.create_topic("t", 1);
  TempDir dir;
  CountSink sink;
  StreamingQuery q(options(c, {{"subscribe", "t"}}), dir / "ck", sink, every_call());
  auto clock = std::make_shared<ManualQueryClock>(1'800'000'000'000);
  clock->on_sleep = [&](std::size_t n) {
    if (n == 30) q.stop();
  };
  q.set_clock(clock);
  q.run();  // batch 0 (empty, at the start), then triggers that find nothing
  // After batch 0 the interval of 0 is already over (no wait); after every
  // trigger without data, the polling delay.
  ASSERT_EQ(clock->sleeps.size(), 30u);
  EXPECT_EQ(clock->sleeps[0].second - clock->sleeps[0].first, 0);
  for (std::size_t i = 1; i < clock->sleeps.size(); ++i)
    EXPECT_EQ(clock->sleeps[i].second - clock->sleeps[i].first, Trigger::kNoDataPollingDelayMs) << "sleep " << i;
  EXPECT_EQ(sink.rows, 0);
}

// The processing-time trigger fires at wall-clock multiples of its interval
// (Spark's ProcessingTimeExecutor), and the batch's timestamp (progress and
// the offsets file's batchTimestampMs) is the trigger's time.
TEST(MockStreamGuards, ProcessingTimeFiresAtIntervalBoundaries) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 5);
  TempDir dir;
  CountSink sink;
  StreamingQuery q(options(c, {{"subscribe", "t"}}), dir / "ck", sink, every(60'000));
  const std::int64_t t0 = 1'800'000'012'345;
  const std::int64_t b1 = (t0 / 60'000 + 1) * 60'000;
  auto clock = std::make_shared<ManualQueryClock>(t0);
  clock->on_sleep = [&](std::size_t n) {
    if (n == 1) c.append_values("t", 0, 3);
    if (n == 2) q.stop();
  };
  q.set_clock(clock);
  std::vector<std::pair<std::int64_t, std::int64_t>> batches;  // (timestamp, rows)
  q.run([&](const kwire::source::BatchProgress& p) { batches.emplace_back(p.timestamp_ms, p.num_input_rows); });
  ASSERT_EQ(clock->sleeps.size(), 2u);
  EXPECT_EQ(clock->sleeps[0], std::make_pair(t0, b1));
  EXPECT_EQ(clock->sleeps[1], std::make_pair(b1, b1 + 60'000));
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0], std::make_pair(t0, std::int64_t{5}));
  EXPECT_EQ(batches[1], std::make_pair(b1, std::int64_t{3}));
  std::ifstream in(dir / "ck" / "offsets" / "1");
  const std::string offsets1((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(offsets1.find("\"batchTimestampMs\":" + std::to_string(b1)), std::string::npos) << offsets1;
}

// minOffsetsPerTrigger holds a small backlog back until maxTriggerDelay has
// passed since the last batch (Spark's delayBatch): the held batch fires at
// the first trigger 15 minutes or more after batch 0, with no real waiting.
TEST(MockStreamGuards, MaxTriggerDelayFiresTheHeldBatchAtItsFirstTrigger) {
  MockCluster c;
  c.create_topic("t", 1);
  c.append_values("t", 0, 7);
  TempDir dir;
  CountSink sink;
  StreamingQuery q(options(c, {{"subscribe", "t"}, {"minOffsetsPerTrigger", "100"}, {"maxTriggerDelay", "15m"}}),
                   dir / "ck", sink, every(60'000));
  const std::int64_t t0 = 1'800'000'012'345;
  auto clock = std::make_shared<ManualQueryClock>(t0);
  clock->on_sleep = [&](std::size_t n) {
    if (n == 1) c.append_values("t", 0, 2);
    if (n > 100) q.stop();  // a guard: the held batch fires long before
  };
  q.set_clock(clock);
  std::vector<std::pair<std::int64_t, std::int64_t>> batches;  // (timestamp, rows)
  q.run([&](const kwire::source::BatchProgress& p) { batches.emplace_back(p.timestamp_ms, p.num_input_rows); }, 2);
  ASSERT_EQ(batches.size(), 2u);
  EXPECT_EQ(batches[0], std::make_pair(t0, std::int64_t{7}));
  // The first minute boundary at or after t0 + 15 min.
  const std::int64_t due = t0 + 15 * 60'000;
  const std::int64_t fired = (due + 60'000 - 1) / 60'000 * 60'000;
  EXPECT_EQ(batches[1], std::make_pair(fired, std::int64_t{2}));
  // One wait per minute boundary, from the first after t0 to the one it fired at.
  const std::int64_t b1 = (t0 / 60'000 + 1) * 60'000;
  EXPECT_EQ(static_cast<std::int64_t>(clock->sleeps.size()), (fired - b1) / 60'000 + 1);
  EXPECT_EQ(clock->sleeps.back().second, fired);
}

TEST(MockStreamGuards, MaxBatchesMustBePositive) {
  MockCluster c;
  c.create_topic("t", 1);
  TempDir dir;
  CountSink sink;
  StreamingQuery q(options(c, {{"subscribe", "t"}}), dir / "ck", sink, every_call());
  EXPECT_THROW(q.run({}, -1), std::invalid_argument);
  EXPECT_THROW(q.run({}, 0), std::invalid_argument);
}
