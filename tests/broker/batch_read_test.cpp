// `kwire read`, the batch query, end to end against a real broker: JSON
// start and end offsets, the planned ranges and the rows written by the sink.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"
#include "kwire/source/batch.hpp"
#include "kwire/source/sink.hpp"

using namespace kwire_test;

namespace {

class BatchRead : public BrokerTest {
 protected:
  // The batch query over `topic` from earliest to latest, `extra` options added.
  kwire::source::BatchQuery whole_topic(const std::string& topic, std::map<std::string, std::string> extra = {}) {
    extra.insert({{"kafka.bootstrap.servers", bootstrap()},
                  {"subscribe", topic},
                  {"startingOffsets", "earliest"},
                  {"endingOffsets", "latest"}});
    return kwire::source::BatchQuery(extra);
  }
  // Values "<prefix><i>" for i in [0, count) into one partition, each with the
  // header src=cli, with `kwire produce -p`.
  void produce_to(const std::string& topic, int partition, int count, const std::string& prefix) {
    std::string input;
    for (int i = 0; i < count; ++i) input += prefix + std::to_string(i) + "\n";
    auto r =
        run_kwire({"produce", "-b", bootstrap(), "-t", topic, "-p", std::to_string(partition), "-H", "src=cli"}, input);
    ASSERT_EQ(r.exit_code, 0) << r.describe();
  }
};

// Keeps (partition, offset, value) of every row written; `fail_at_write`
// makes the n-th write throw.
class CollectingSink : public kwire::source::Sink {
 public:
  struct Item {
    std::int32_t partition;
    std::int64_t offset;
    std::string value;
  };
  explicit CollectingSink(int fail_at_write = -1) : fail_at_write_(fail_at_write) {}
  void begin_batch(std::int64_t) override {}
  void write(std::span<const kwire::source::Row> rows) override {
    if (writes_++ == fail_at_write_) throw std::runtime_error("this sink fails");
    for (const auto& r : rows) items.push_back({r.partition, r.offset, std::string(r.value_string())});
  }
  std::int64_t commit_batch(std::int64_t) override { return static_cast<std::int64_t>(items.size()); }
  std::vector<Item> items;

 private:
  int fail_at_write_;
  int writes_ = 0;
};

}  // namespace

// Several readers at once (BatchQuery::read with sinks): reader j reads the
// j-th contiguous part of every range, each offset once.
TEST_F(BatchRead, ReadersAtOnceReadEachPartOfEveryRangeOnce) {
  const auto topic = unique_topic("batch-read-parts");
  create_topic(topic, 2);
  produce_to(topic, 0, 101, "a-");
  produce_to(topic, 1, 50, "b-");
  auto query = whole_topic(topic);
  const auto plan = query.plan();
  CollectingSink s0, s1, s2;
  kwire::source::Sink* sinks[] = {&s0, &s1, &s2};
  const auto result = query.read(plan, std::span<kwire::source::Sink* const>(sinks));
  EXPECT_EQ(result.rows, 151);
  EXPECT_EQ(result.output_rows, 151);
  EXPECT_EQ(result.data_loss, 0);
  // 101 offsets in parts of 34, 34, 33; 50 in 17, 17, 16.
  const std::map<std::int32_t, std::vector<std::pair<std::int64_t, std::int64_t>>> parts = {
      {0, {{0, 34}, {34, 68}, {68, 101}}}, {1, {{0, 17}, {17, 34}, {34, 50}}}};
  const CollectingSink* all[] = {&s0, &s1, &s2};
  for (int j = 0; j < 3; ++j) {
    std::map<std::int32_t, std::vector<std::int64_t>> seen;
    for (const auto& item : all[j]->items) {
      seen[item.partition].push_back(item.offset);
      EXPECT_EQ(item.value, (item.partition == 0 ? "a-" : "b-") + std::to_string(item.offset));
    }
    for (const auto& [partition, ranges] : parts) {
      std::vector<std::int64_t> expected;
      for (std::int64_t o = ranges[j].first; o < ranges[j].second; ++o) expected.push_back(o);
      EXPECT_EQ(seen[partition], expected) << "reader " << j << " partition " << partition;
    }
  }
}

// Ranges split by minPartitions: the parts are cut from each partition's
// ranges taken together, so no offset is read by two readers.
TEST_F(BatchRead, ReadersAtOnceOverSplitRangesReadEachOffsetOnce) {
  const auto topic = unique_topic("batch-read-parts-split");
  create_topic(topic, 1);
  produce_to(topic, 0, 100, "a-");
  auto query = whole_topic(topic, {{"minPartitions", "4"}});
  const auto plan = query.plan();
  ASSERT_EQ(plan.ranges.size(), 4u);
  CollectingSink s0, s1;
  kwire::source::Sink* sinks[] = {&s0, &s1};
  const auto result = query.read(plan, std::span<kwire::source::Sink* const>(sinks));
  EXPECT_EQ(result.rows, 100);
  std::vector<std::int64_t> got0, got1, want0, want1;
  for (const auto& item : s0.items) got0.push_back(item.offset);
  for (const auto& item : s1.items) got1.push_back(item.offset);
  for (std::int64_t o = 0; o < 50; ++o) want0.push_back(o);
  for (std::int64_t o = 50; o < 100; ++o) want1.push_back(o);
  EXPECT_EQ(got0, want0);
  EXPECT_EQ(got1, want1);
}

// A reader whose sink fails: its error is the read's, after every reader
// stopped; the error of a later reader does not hide an earlier one's.
TEST_F(BatchRead, ReadersAtOnceStopOnTheFirstReadersError) {
  const auto topic = unique_topic("batch-read-parts-fail");
  create_topic(topic, 1);
  produce_to(topic, 0, 40, "a-");
  auto query = whole_topic(topic);
  const auto plan = query.plan();
  CollectingSink ok, failing(0);
  kwire::source::Sink* sinks[] = {&ok, &failing};
  EXPECT_THROW(
      {
        try {
          query.read(plan, std::span<kwire::source::Sink* const>(sinks));
        } catch (const std::runtime_error& e) {
          EXPECT_STREQ(e.what(), "this sink fails");
          throw;
        }
      },
      std::runtime_error);
  EXPECT_LE(ok.items.size(), 20u);
}

TEST_F(BatchRead, JsonOffsetsThroughTheCli) {
  const auto topic = unique_topic("batch-read");
  create_topic(topic, 2);
  produce_to(topic, 0, 10, "a-");
  produce_to(topic, 1, 6, "b-");
  const std::vector<std::string> common = {"read",
                                           "-b",
                                           bootstrap(),
                                           "-o",
                                           "subscribe=" + topic,
                                           "-o",
                                           "startingOffsets={\"" + topic + "\":{\"0\":3,\"1\":-2}}",
                                           "-o",
                                           "endingOffsets={\"" + topic + "\":{\"0\":7,\"1\":-1}}",
                                           "-o",
                                           "includeHeaders=true",
                                           "-o",
                                           "minPartitions=3"};

  auto plan_args = common;
  plan_args.push_back("--plan-only");
  auto plan = run_kwire(plan_args);
  ASSERT_EQ(plan.exit_code, 0) << plan.describe();
  // minPartitions=3 over [3,7) and [0,6): 4/10*3 rounds to 1 part, 6/10*3 to 2.
  EXPECT_EQ(plan.out, "{\"startOffsets\":{\"" + topic + "\":{\"0\":3,\"1\":0}},\"endOffsets\":{\"" + topic +
                          "\":{\"0\":7,\"1\":6}},\"ranges\":[{\"topic\":\"" + topic +
                          "\",\"partition\":0,\"fromOffset\":3,\"untilOffset\":7},{\"topic\":\"" + topic +
                          "\",\"partition\":1,\"fromOffset\":0,\"untilOffset\":3},{\"topic\":\"" + topic +
                          "\",\"partition\":1,\"fromOffset\":3,\"untilOffset\":6}]}\n");

  TempDir dir;
  auto read_args = common;
  read_args.push_back("--sink");
  read_args.push_back("jsonl:" + (dir / "out").string());
  auto read = run_kwire(read_args);
  ASSERT_EQ(read.exit_code, 0) << read.describe();
  EXPECT_NE(read.err.find("read 10 rows from 3 ranges"), std::string::npos) << read.err;
  std::string text;
  for (auto& f : std::filesystem::directory_iterator(dir / "out")) text += read_file(f.path());
  auto rows = parse_json_records(text);
  std::vector<std::string> got;
  for (auto& r : rows) {
    EXPECT_EQ(r.topic, topic);
    ASSERT_EQ(r.headers.size(), 1u);
    EXPECT_EQ(r.headers[0].first, "src");
    EXPECT_EQ(r.headers[0].second, "cli");
    got.push_back(std::to_string(r.partition) + "@" + std::to_string(r.offset) + "=" + r.value.value_or("null"));
  }
  EXPECT_EQ(got, (std::vector<std::string>{"0@3=a-3", "0@4=a-4", "0@5=a-5", "0@6=a-6", "1@0=b-0", "1@1=b-1", "1@2=b-2",
                                           "1@3=b-3", "1@4=b-4", "1@5=b-5"}));
}

TEST_F(BatchRead, EarliestEndIsRejectedWithSparksText) {
  const auto topic = unique_topic("batch-read-reject");
  create_topic(topic, 1);
  auto r = run_kwire({"read", "-b", bootstrap(), "-o", "subscribe=" + topic, "-o", "endingOffsets=earliest"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(r.err, "kwire: error: ending offset can't be earliest for batch queries on Kafka\n");
}

// Records deleted below a JSON start: the plan keeps the start (Spark does not
// check concrete offsets against the log), and the read raises
// COULD_NOT_READ_OFFSET_RANGE, or with failOnDataLoss=false skips to the
// earliest offset still there.
TEST_F(BatchRead, DeletedStartIsDataLossEachWay) {
  const auto topic = unique_topic("batch-read-loss");
  create_topic(topic, 1);
  produce_to(topic, 0, 10, "a-");
  auto del = run_kwire({"delete-records", "-b", bootstrap(), "-t", topic, "--before", "6"});
  ASSERT_EQ(del.exit_code, 0) << del.describe();
  const std::vector<std::string> args = {
      "read", "-b", bootstrap(), "-o", "subscribe=" + topic, "-o", "startingOffsets={\"" + topic + "\":{\"0\":2}}"};

  auto strict = run_kwire(args);
  EXPECT_EQ(strict.exit_code, 1);
  EXPECT_NE(strict.err.find("KAFKA_DATA_LOSS.COULD_NOT_READ_OFFSET_RANGE"), std::string::npos) << strict.err;
  EXPECT_NE(strict.err.find("Could not read records in offset [2, 10) for topic partition " + topic + "-0"),
            std::string::npos)
      << strict.err;
  EXPECT_EQ(strict.out, "");

  auto lenient_args = args;
  lenient_args.insert(lenient_args.end(), {"-o", "failOnDataLoss=false"});
  auto lenient = run_kwire(lenient_args);
  ASSERT_EQ(lenient.exit_code, 0) << lenient.describe();
  EXPECT_NE(lenient.err.find("read 4 rows from 1 ranges"), std::string::npos) << lenient.err;
  EXPECT_NE(lenient.err.find("(dataLoss 1, offsetOutOfRange 4)"), std::string::npos) << lenient.err;
  const auto lines = split_lines(lenient.out);
  ASSERT_EQ(lines.size(), 4u) << lenient.out;
  for (int i = 0; i < 4; ++i) {
    const std::string offset = std::to_string(6 + i);
    EXPECT_NE(lines[i].find("\"value\":\"a-" + offset + "\""), std::string::npos) << lines[i];
    EXPECT_NE(lines[i].find("\"offset\":" + offset + ","), std::string::npos) << lines[i];
  }
}
