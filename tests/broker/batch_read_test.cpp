// `kwire read`, the batch query, end to end against a real broker: JSON
// start and end offsets, the planned ranges and the rows written by the sink.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>
#include <vector>

#include "common.hpp"

using namespace kwire_test;

namespace {

class BatchRead : public BrokerTest {
 protected:
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

}  // namespace

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
